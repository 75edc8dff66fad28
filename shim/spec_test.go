package shim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDstackShimConfig(t *testing.T) {
	spec := DstackShimConfig{Version: "0.20.1", Arch: "arm64", ShimURL: "https://mirror.example/{version}/{binary}-{arch}",
		SHA256: "abc123", Env: map[string]string{"DSTACK_SERVICE_MODE": "1", "DSTACK_SHIM_LOG_LEVEL": "3"}}.Spec()
	spec, err := spec.validate()
	require.NoError(t, err)
	require.Len(t, spec.Install, 2)
	dl := spec.Install[1].Command
	assert.Contains(t, dl, `-o /usr/local/bin/dstack-shim.download 'https://mirror.example/0.20.1/dstack-shim-arm64'`)
	assert.Contains(t, dl, `&& echo 'abc123  /usr/local/bin/dstack-shim.download' | sha256sum -c - &&`)
	assert.Equal(t, "https://dstack-runner-downloads.s3.eu-west-1.amazonaws.com/0.20.1/binaries/dstack-runner-linux-arm64",
		spec.Env["DSTACK_RUNNER_DOWNLOAD_URL"])
	assert.Equal(t, "1", spec.Env["DSTACK_SERVICE_MODE"])
	assert.Equal(t, "3", spec.Env["DSTACK_SHIM_LOG_LEVEL"])
	assert.Equal(t, 10998, spec.HealthPort)
	assert.Equal(t, "/api/healthcheck", spec.HealthPath)
	assert.Equal(t, "dstack-shim", spec.Service)
	assert.Equal(t, "/run/dstack-shim.pid", spec.PIDFile)

	unit := spec.unitText()
	assert.Contains(t, unit, "ExecStart=/usr/local/bin/dstack-shim\n")
	assert.Contains(t, unit, "Environment=\"DSTACK_SHIM_HOME=/root/.dstack\"\n")
	assert.Contains(t, unit, "StandardOutput=append:/root/.dstack/shim.log\n")
	assert.Contains(t, unit, "WantedBy=multi-user.target\n")
}

func TestSpecValidate(t *testing.T) {
	for name, mut := range map[string]func(*AgentSpec){
		"name":        func(s *AgentSpec) { s.Name = "bad name;" },
		"command":     func(s *AgentSpec) { s.Command = " " },
		"port":        func(s *AgentSpec) { s.HealthPort = 0 },
		"path":        func(s *AgentSpec) { s.HealthPath = "health" },
		"env name":    func(s *AgentSpec) { s.Env = map[string]string{"A-B": "x"} },
		"env newline": func(s *AgentSpec) { s.Env = map[string]string{"A": "x\ny"} },
		"pid file":    func(s *AgentSpec) { s.PIDFile = "run/x.pid" },
	} {
		s := DstackShim("1")
		mut(&s)
		_, err := s.validate()
		assert.Error(t, err, name)
	}
}

func TestShQuote(t *testing.T) {
	assert.Equal(t, `'it'\''s'`, shQuote("it's"))
	c := commands{spec: AgentSpec{Name: "a"}, sudo: true}
	assert.Equal(t, `sudo -n sh -c 'echo '\''hi'\'''`, c.wrap("echo 'hi'"))
}
