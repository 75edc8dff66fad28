package fleet

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The folds that count recorded marks take a give-back (an idle mark with
// a hand-out's token) only for the node's current hand-out: after another
// Acquire's busy mark, or a MarkBusy of the node once idle, it changes
// nothing; a MarkIdle ends the hand-out, and so does a MarkBusy of an idle
// node, while a MarkBusy of a node held by a job (the job's own mark)
// keeps it, so that the job's give-back still frees the node.
func TestFoldsCountAGiveBackOnlyForTheCurrentHandOut(t *testing.T) {
	marks, handOuts, _ := foldMarks([]intent{
		{kind: intentIdle, name: "a", token: "t1"}, {kind: intentBusy, name: "a", token: "t2"}, {kind: intentIdle, name: "a", token: "t1"},
		{kind: intentIdle, name: "b", token: "t1"}, {kind: intentBusy, name: "b"}, {kind: intentIdle, name: "b", token: "t1"},
		{kind: intentIdle, name: "c", token: "old"},
		{kind: intentBusy, name: "d", token: "t3"}, {kind: intentIdle, name: "d", token: "t3"},
		{kind: intentBusy, name: "e"},
		{kind: intentBusy, name: "g"}, {kind: intentIdle, name: "g", token: "t1"},
		{kind: intentBusy, name: "i", token: "t4"}, {kind: intentBusy, name: "i"}, {kind: intentIdle, name: "i", token: "t4"},
		{kind: intentIdle, name: "k"}, {kind: intentBusy, name: "k"}, {kind: intentIdle, name: "k", token: "t1"},
		{kind: intentBusy, name: "idle"}, {kind: intentIdle, name: "idle", token: "t1"},
	}, "f", func(id string) (string, bool) {
		if id == "idle" {
			return "", false
		}
		return "t1", true
	})
	assert.Equal(t, map[string]markState{"a": markBusy, "b": markBusy, "d": markIdle, "e": markBusy, "g": markIdle,
		"i": markIdle, "k": markBusy, "idle": markBusy}, marks)
	assert.Equal(t, map[string]string{"a": "t2", "b": "", "d": "", "e": "t1", "g": "", "i": "", "k": "", "idle": ""}, handOuts,
		"e, g, i: the job's own MarkBusy keeps its hand-out; k: after a MarkIdle it starts a job with none")

	rec := InstanceRecord{Instance: Instance{RequestID: "n", Status: StatusBusy}, Busy: true, HandOut: "t1"}
	ins := []Intent{
		{Seq: 3, Kind: IntentIdle, InstanceID: "n", Acquire: "t1"},
		{Seq: 4, Kind: IntentBusy, InstanceID: "n", Acquire: "t2"},
		{Seq: 5, Kind: IntentIdle, InstanceID: "n", Acquire: "t1"},
	}
	cur, busy, released := handOutAfter(rec, ins, 0)
	assert.Equal(t, "t2", cur, "job 2's hand-out stands")
	assert.True(t, busy)
	assert.False(t, released)
	cur, busy, _ = handOutAfter(rec, ins[:1], 0)
	assert.Equal(t, "", cur)
	assert.False(t, busy, "given back")
	cur, busy, _ = handOutAfter(rec, append(ins, Intent{Seq: 6, Kind: IntentVoid, InstanceID: "n", Acquire: "t2"}), 0)
	assert.Equal(t, "", cur, "job 2's Acquire answered an error (its mark voided): it took nothing")
	assert.False(t, busy)

	cur, busy, _ = handOutAfter(rec, []Intent{
		{Seq: 3, Kind: IntentBusy, InstanceID: "n"},
		{Seq: 4, Kind: IntentIdle, InstanceID: "n", Acquire: "t1"},
	}, 0)
	assert.Equal(t, "", cur)
	assert.False(t, busy, "the job's own MarkBusy keeps its hand-out: its give-back frees the node")
	cur, busy, _ = handOutAfter(rec, []Intent{
		{Seq: 3, Kind: IntentIdle, InstanceID: "n"},
		{Seq: 4, Kind: IntentBusy, InstanceID: "n"},
		{Seq: 5, Kind: IntentIdle, InstanceID: "n", Acquire: "t1"},
	}, 0)
	assert.Equal(t, "", cur)
	assert.True(t, busy, "a MarkBusy after a MarkIdle starts a job with no hand-out")

	taken, _ := takenBetween([]Intent{
		{Seq: 11, Kind: IntentBusy, InstanceID: "n", Acquire: "t2"},
		{Seq: 12, Kind: IntentIdle, InstanceID: "n", Acquire: "t1"},
	}, "n", 10, 13)
	assert.True(t, taken, "job 1's late give-back does not free the node job 2 took")
	taken, _ = takenBetween([]Intent{
		{Seq: 11, Kind: IntentBusy, InstanceID: "n", Acquire: "t2"},
		{Seq: 12, Kind: IntentIdle, InstanceID: "n", Acquire: "t2"},
	}, "n", 10, 13)
	assert.False(t, taken, "job 2 gave it back")
	taken, _ = takenBetween([]Intent{
		{Seq: 11, Kind: IntentBusy, InstanceID: "n", Acquire: "t2"},
		{Seq: 12, Kind: IntentBusy, InstanceID: "n"},
		{Seq: 13, Kind: IntentIdle, InstanceID: "n", Acquire: "t2"},
	}, "n", 10, 14)
	assert.False(t, taken, "job 2 marked it busy itself, then gave it back")
	taken, _ = takenBetween([]Intent{
		{Seq: 11, Kind: IntentBusy, InstanceID: "n"},
		{Seq: 12, Kind: IntentIdle, InstanceID: "n", Acquire: "t2"},
	}, "n", 10, 13)
	assert.True(t, taken, "marked busy while idle: a job with no hand-out")
}
