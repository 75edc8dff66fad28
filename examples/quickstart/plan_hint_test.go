package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A known Vultr plan that cannot serve the quickstart's cluster fleet (no
// private networking): the message names plans of the same family that can.
func TestPlanWithoutVPCSaysWhatToTry(t *testing.T) {
	var out, errOut bytes.Buffer
	run(t.Context(), []string{"-vultr-plan", "vbm-4c-32gb", "-hotaisle-nodes", "0"}, noEnv, &out, &errOut)
	msg := errOut.String() + out.String()
	assert.Contains(t, msg, "vbm-4c-32gb")
	assert.Regexp(t, `(try|nearest|instead|use)[^\n]*vbm-(24c|48c|112c|256c)`, msg,
		"no plan with private networking suggested:\n%s", msg)
}
