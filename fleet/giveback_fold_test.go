package fleet

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The folds that count recorded marks take a give-back (an idle mark with
// a hand-out's token) only for the node's current hand-out: after another
// Acquire's busy mark, or a MarkBusy, it changes nothing; a tokenless
// mark ends the hand-out.
func TestFoldsCountAGiveBackOnlyForTheCurrentHandOut(t *testing.T) {
	marks, handOuts, _ := foldMarks([]intent{
		{kind: intentIdle, name: "a", token: "t1"}, {kind: intentBusy, name: "a", token: "t2"}, {kind: intentIdle, name: "a", token: "t1"},
		{kind: intentIdle, name: "b", token: "t1"}, {kind: intentBusy, name: "b"}, {kind: intentIdle, name: "b", token: "t1"},
		{kind: intentIdle, name: "c", token: "old"},
		{kind: intentBusy, name: "d", token: "t3"}, {kind: intentIdle, name: "d", token: "t3"},
	}, "f", func(id string) string { return "t1" })
	assert.Equal(t, map[string]markState{"a": markBusy, "b": markBusy, "d": markIdle}, marks)
	assert.Equal(t, map[string]string{"a": "t2", "b": "", "d": ""}, handOuts)

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
}
