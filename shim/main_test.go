package shim

import (
	"crypto/ed25519"
	"crypto/sha256"
	"log/slog"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/crypto/ssh"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testKey derives an ed25519 private key from name.
func testKey(name string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("shim test key " + name))
	return ed25519.NewKeyFromSeed(seed[:])
}

// testSigner derives an ed25519 signer from name (in memory only).
func testSigner(t *testing.T, name string) ssh.Signer {
	t.Helper()
	s, err := ssh.NewSignerFromKey(testKey(name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testLogger logs to the test's output at debug level.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}
