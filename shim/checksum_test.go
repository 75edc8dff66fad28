package shim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// The dstack-shim preset's checksum step runs on a sim host (as a sudo
// user, without systemd): the digest of what the sim serves for the URL
// installs and starts the agent; another digest fails the download step
// with sha256sum's words and installs nothing.
func TestStartChecksumStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := sim.NewNetwork(nil, 1)
		defer n.Close()
		url := "https://downloads.example/" + shimVersion + "/dstack-shim-amd64"
		sum := sha256.Sum256(sim.DownloadContent(url))
		for i, digest := range []string{strings.Repeat("ab", 32), hex.EncodeToString(sum[:])} {
			h := addSimHost(t, n, sim.HostConfig{Addr: "203.0.113.50:22", InstanceID: "vm-50-" + digest[:4],
				User: "hotaisle", NoSystemd: true})
			spec := DstackShimConfig{Version: shimVersion, SHA256: digest,
				ShimURL: "https://downloads.example/{version}/{binary}-{arch}"}.Spec()
			s, err := New(spec, []ssh.Signer{clientKey(t)}, PinnedKey(h.PublicKey()), WithDial(n.Dial), WithLogger(testLogger(t)))
			require.NoError(t, err)
			err = s.Start(context.Background(), instOf(t, h))
			cmds := commandsOf(h)
			require.GreaterOrEqual(t, len(cmds), 2)
			assert.Contains(t, cmds[1], "| sha256sum -c - &&")
			installed, ok := h.ReadFile(DstackShimBinary)
			if i == 0 {
				var se *StepError
				require.ErrorAs(t, err, &se)
				assert.Equal(t, "download dstack-shim", se.Step)
				assert.Equal(t, 1, se.ExitStatus)
				assert.Equal(t, "sha256sum: WARNING: 1 computed checksum did NOT match\n", se.Stderr)
				assert.False(t, ok, "nothing installed")
				assert.Zero(t, h.AgentStarts())
				continue
			}
			require.NoError(t, err)
			assert.Equal(t, sim.DownloadContent(url), installed)
			assert.True(t, h.AgentRunning())
			assert.True(t, h.AgentDetached())
			pid, ok := h.ReadFile("/run/dstack-shim.pid")
			require.True(t, ok)
			assert.Regexp(t, `^[0-9]+\n$`, string(pid), "the agent's pid")
		}
	})
}
