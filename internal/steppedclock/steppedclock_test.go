package steppedclock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAdvanceMovesOnlyByHand(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(start)
	assert.NoError(t, c.Sleep(t.Context(), time.Hour), "Sleep returns at once")
	assert.Equal(t, start, c.Now(), "and moves nothing")
	c.Advance(90 * time.Second)
	assert.Equal(t, start.Add(90*time.Second), c.Now())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, c.Sleep(ctx, time.Second), context.Canceled)
}
