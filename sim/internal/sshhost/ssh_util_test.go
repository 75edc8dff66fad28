package sshhost

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// testSigner is a deterministic client key named name.
func testSigner(t testing.TB, name string) ssh.Signer {
	t.Helper()
	sum := sha256.Sum256([]byte("client key " + name))
	s, err := ssh.NewSignerFromKey(ed25519.NewKeyFromSeed(sum[:]))
	require.NoError(t, err)
	return s
}

// keyList is a mutable AuthorizedKeys source.
type keyList struct {
	mu   sync.Mutex
	keys []ssh.PublicKey
}

func (k *keyList) add(s ssh.Signer) {
	k.mu.Lock()
	k.keys = append(k.keys, s.PublicKey())
	k.mu.Unlock()
}

func (k *keyList) get() []ssh.PublicKey {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]ssh.PublicKey(nil), k.keys...)
}

func authorized(signers ...ssh.Signer) func() []ssh.PublicKey {
	kl := &keyList{}
	for _, s := range signers {
		kl.add(s)
	}
	return kl.get
}

type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// dialSSH dials and handshakes, pinning hostKey; ctx also cuts the
// handshake (x/crypto/ssh does not watch a ctx), as the shim must.
func dialSSH(ctx context.Context, dial dialFunc, addr, user string, key ssh.Signer, hostKey ssh.PublicKey) (*ssh.Client, error) {
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return handshake(ctx, conn, addr, user, key, hostKey)
}

func handshake(ctx context.Context, conn net.Conn, addr, user string, key ssh.Signer, hostKey ssh.PublicKey) (*ssh.Client, error) {
	cfg := &ssh.ClientConfig{User: user, Auth: []ssh.AuthMethod{ssh.PublicKeys(key)},
		HostKeyCallback: ssh.FixedHostKey(hostKey)}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	cc, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if !stop() {
		if err == nil {
			cc.Close()
		}
		return nil, ctx.Err()
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return ssh.NewClient(cc, chans, reqs), nil
}

// mustDial dials h as its user with key.
func mustDial(t testing.TB, n *Network, h *Host, key ssh.Signer) *ssh.Client {
	t.Helper()
	c, err := dialSSH(context.Background(), n.Dial, h.Addr(), h.User(), key, h.PublicKey())
	require.NoError(t, err)
	return c
}

// run runs cmd with stdin and returns its output and exit status.
func run(t testing.TB, c *ssh.Client, cmd, stdin string) (stdout, stderr string, exit int) {
	t.Helper()
	stdout, stderr, exit, err := runE(c, cmd, stdin)
	require.NoError(t, err)
	return stdout, stderr, exit
}

// runE is run returning transport errors (usable off the test goroutine).
func runE(c *ssh.Client, cmd, stdin string) (stdout, stderr string, exit int, err error) {
	s, err := c.NewSession()
	if err != nil {
		return "", "", 0, err
	}
	defer s.Close()
	var out, errOut bytes.Buffer
	s.Stdout, s.Stderr, s.Stdin = &out, &errOut, strings.NewReader(stdin)
	err = s.Run(cmd)
	var exitErr *ssh.ExitError
	if errors.As(err, &exitErr) {
		exit, err = exitErr.ExitStatus(), nil
	}
	return out.String(), errOut.String(), exit, err
}

// get sends GET path over a direct-tcpip channel to localhost:port.
func get(c *ssh.Client, port, path string) (int, string, error) {
	conn, err := c.Dial("tcp", net.JoinHostPort("localhost", port))
	if err != nil {
		return 0, "", err
	}
	defer conn.Close()
	return getOn(conn, path)
}

func getOn(conn net.Conn, path string) (int, string, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://localhost"+path, nil)
	if err := req.Write(conn); err != nil {
		return 0, "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// installAgent downloads dstack-shim to /usr/local/bin and makes it
// executable, as a shim's install step would.
func installAgent(t testing.TB, c *ssh.Client) {
	t.Helper()
	_, stderr, exit := run(t, c, `sudo sh -c 'curl -fsSL -o /usr/local/bin/dstack-shim https://example.com/dstack-shim-linux-amd64 && chmod +x /usr/local/bin/dstack-shim'`, "")
	require.Equal(t, 0, exit, stderr)
}

const shimUnit = `[Unit]
Description=dstack-shim
After=network-online.target

[Service]
ExecStart=/usr/local/bin/dstack-shim
Restart=always

[Install]
WantedBy=multi-user.target
`
