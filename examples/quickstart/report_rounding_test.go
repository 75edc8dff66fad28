package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A plan priced below a cent an hour (vc2-1c-1gb, 0.007 USD/h) is charged
// 0.01 per server by the Vultr ledger, which rounds each charge to the
// cent; the least possible and the optimum are rounded the same way, so a
// run that paid only the minimum shows no overspend.
func TestSubCentPlanShowsNoRoundingOverspend(t *testing.T) {
	rep, out := quickstartInBubble(t, "-vultr-plan", "vc2-1c-1gb")
	assert.Empty(t, rep.leaked)
	assertWithin5Percent(t, rep)
	totals := regexp.MustCompile(`(?m)^  vultr +(total +)?[0-9.]+ +[0-9.]+ +([+-][0-9.]+%)$`).FindAllStringSubmatch(out, -1)
	assert.Len(t, totals, 2, "the bill's total and the optimum's line:\n%s", out)
	for _, m := range totals {
		assert.Equal(t, "+0.0%", m[2], m[0])
	}
}

// With -plain an event that names its instance in its message (an
// InstanceCreated line: "request → id …") does not name it again.
func TestPlainEventsNameTheInstanceOnce(t *testing.T) {
	_, out := quickstartInBubble(t)
	created := 0
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, "InstanceCreated") {
			continue
		}
		created++
		id := regexp.MustCompile(`[0-9a-f]{12} → \S+`).FindString(line)
		assert.Equal(t, 1, strings.Count(line, id), line)
	}
	assert.Positive(t, created)
}
