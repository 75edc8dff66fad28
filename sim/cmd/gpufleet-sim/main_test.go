package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"-speed", "60", "-seed", "9", "-team", "acme", "-hotaisle-key", "k"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 60.0, c.speed)
	assert.Equal(t, uint64(9), c.seed)
	assert.Equal(t, "acme", c.team)
	assert.Equal(t, "k", c.hotaisleKey)
	assert.Equal(t, "127.0.0.1:0", c.vultrAddr)
	for _, bad := range [][]string{{"-speed", "0"}, {"-speed", "-1"}, {"-speed", "NaN"}, {"-speed", "Inf"}, {"-speed", "1e9"}, {"-vultr-rps", "NaN"}, {"-vultr-rps", "-1"}, {"-vultr-key", ""}, {"-hotaisle-key", " "}, {"-team", ""}, {"-team", "a/b"}, {"-visibility-lag", "-5s"}, {"-chaos-seed", "7"}, {"extra"}, {"-nope"}} {
		_, err := parseFlags(bad, io.Discard)
		assert.Error(t, err, bad)
	}
}

// run serves both fakes on loopback ports, prints their URLs and stops when
// its context ends.
func TestRunServesBothFakes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-hotaisle-key", "hk", "-vultr-key", "vk", "-team", "acme", "-speed", "60"}, pw, io.Discard)
		pw.Close()
	}()
	urls := map[string]string{}
	sc := bufio.NewScanner(pr)
	for len(urls) < 2 && sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		require.True(t, ok, sc.Text())
		urls[k] = v
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	ha, vu := urls["GPUFLEET_SIM_HOTAISLE_URL"], urls["GPUFLEET_SIM_VULTR_URL"]
	require.True(t, strings.HasSuffix(ha, "/api"), ha)
	require.True(t, strings.HasSuffix(vu, "/v2"), vu)

	get := func(url, auth string) int {
		req, err := http.NewRequest("GET", url, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, 200, get(ha+"/teams/acme/virtual_machines/available/", "Token hk"))
	assert.Equal(t, 401, get(ha+"/user/", "Token vk"))
	assert.Equal(t, 200, get(vu+"/instances", "Bearer vk"))
	assert.Equal(t, 401, get(vu+"/instances", "Bearer hk"))
	assert.Equal(t, 200, get(vu+"/regions", ""))
	assert.Equal(t, 200, get(strings.TrimSuffix(ha, "/api")+"/_sim/routes", ""))
	assert.Equal(t, 200, get(strings.TrimSuffix(vu, "/v2")+"/_sim/snapshot", ""))

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop")
	}
}

// The process run with -h prints what the command is and its flags, and
// exits 0.
func TestHelpProcessExitsZero(t *testing.T) {
	if os.Getenv("GPUFLEET_SIM_MAIN") == "1" {
		os.Args = []string{"gpufleet-sim", "-h"}
		main()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelpProcessExitsZero$")
	cmd.Env = append(os.Environ(), "GPUFLEET_SIM_MAIN=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), "exit status")
	assert.Contains(t, stderr.String(), "serves fakes of the Vultr API v2 and the Hot Aisle API")
	assert.Contains(t, stderr.String(), "-chaos")
	assert.Contains(t, stderr.String(), "/_sim/")
}

func TestParseChaosFlags(t *testing.T) {
	c, err := parseFlags([]string{"-seed", "4", "-chaos", "bad-day", "-visibility-lag", "30s"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "bad-day", c.chaos)
	assert.Equal(t, uint64(4), c.chaosSeed, "the chaos seed defaults to -seed")
	assert.Equal(t, 30*time.Second, c.lag)
	c, err = parseFlags([]string{"-chaos", "storm", "-chaos-seed", "0"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, uint64(0), c.chaosSeed)
	_, err = parseFlags([]string{"-chaos", "sunny"}, io.Discard)
	assert.ErrorContains(t, err, "bad-day")
	v, h, n := c.fakes()
	defer n.Close()
	_, on := chaosOn(v)
	assert.True(t, on)
	_, on = chaosOn(h)
	assert.True(t, on)
}

// -h prints what the program is and exits 0, like the examples.
func TestHelpExitsZero(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"-h"}, &out, &errOut)
	assert.Equal(t, 0, exitCode(err, &errOut))
	assert.Contains(t, out.String()+errOut.String(), "gpufleet-sim serves fakes")
	assert.Equal(t, 2, exitCode(errors.New("bad flag"), &errOut))
}
