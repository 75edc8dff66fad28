package shim

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// HostKeyPolicy decides which host keys are accepted. There is no default:
// a Starter needs one, and only InsecureIgnoreHostKey accepts any key.
type HostKeyPolicy interface {
	// Verifier returns how to check the key of the host known as id (the
	// instance's HostIdentity, or "jump:<host:port>" for a jump host) and
	// dialled at addr ("host:port"). An error aborts the connection attempt.
	Verifier(id, addr string) (HostKeyVerifier, error)
}

// HostKeyVerifier checks one host's key.
type HostKeyVerifier struct {
	// Callback accepts or refuses the key; a refusal should be a
	// *HostKeyMismatchError or *UnknownHostError.
	Callback ssh.HostKeyCallback
	// Algorithms, when set, are the host key algorithms offered to the
	// server: the types of the pinned keys first, so that a host with several
	// keys presents the pinned one, then every other usual type, so that a
	// host whose key changed type still presents a key and is refused by
	// Callback (a *HostKeyMismatchError) rather than failing the key
	// exchange. Nil keeps the library's default.
	Algorithms []string
}

// Fingerprint is key's SHA256 fingerprint ("SHA256:..."), as ssh-keygen -l
// prints it.
func Fingerprint(key ssh.PublicKey) string { return ssh.FingerprintSHA256(key) }

func keysEqual(a, b ssh.PublicKey) bool {
	return a != nil && b != nil && bytes.Equal(a.Marshal(), b.Marshal())
}

// algorithmsFor returns the host key algorithms that make a server present
// a key of the same type as one of keys (RSA keys signed with SHA-2), in
// that order, followed by the other plain-key algorithms x/crypto supports
// (no certificates): a host that no longer has a key of a pinned type then
// still completes the key exchange and its key reaches the callback, which
// refuses it as a mismatch. Pinning stays strict: only the callback accepts.
func algorithmsFor(keys ...ssh.PublicKey) []string {
	var out []string
	seen := map[string]bool{}
	add := func(a string) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, k := range keys {
		algs := []string{k.Type()}
		if k.Type() == ssh.KeyAlgoRSA {
			algs = []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}
		}
		for _, a := range algs {
			add(a)
		}
	}
	if len(out) == 0 {
		return nil
	}
	for _, a := range ssh.SupportedAlgorithms().HostKeys {
		if !strings.Contains(a, "-cert-") {
			add(a)
		}
	}
	return out
}

func mismatch(id, addr string, got ssh.PublicKey, want ...ssh.PublicKey) *HostKeyMismatchError {
	e := &HostKeyMismatchError{ID: id, Addr: addr, Got: Fingerprint(got)}
	for _, w := range want {
		e.Want = append(e.Want, Fingerprint(w))
	}
	return e
}

type pinned []ssh.PublicKey

// PinnedKey accepts only the given host keys (for example the key the
// provider reported, or one injected through cloud-init), for every host it
// is used for; any other key is a *HostKeyMismatchError.
func PinnedKey(keys ...ssh.PublicKey) HostKeyPolicy { return pinned(keys) }

func (p pinned) Verifier(id, addr string) (HostKeyVerifier, error) {
	if len(p) == 0 {
		return HostKeyVerifier{}, errors.New("shim: PinnedKey without keys")
	}
	cb := func(_ string, _ net.Addr, key ssh.PublicKey) error {
		for _, k := range p {
			if keysEqual(k, key) {
				return nil
			}
		}
		return mismatch(id, addr, key, p...)
	}
	return HostKeyVerifier{Callback: cb, Algorithms: algorithmsFor(p...)}, nil
}

// HostKeyStore keeps the host key pinned for each host identity (an
// instance's HostIdentity, or "jump:<host:port>"). Implementations must be
// safe for concurrent use; a durable one lets pins survive a restart. One
// that also implements HostKeyForgetter drops the pins of terminated
// instances when told (Starter.ForgetInstance).
type HostKeyStore interface {
	// HostKey returns the key pinned for id, or nil when none is.
	HostKey(id string) (ssh.PublicKey, error)
	// PinHostKey pins key for id unless a key is already pinned, atomically,
	// and returns the key pinned for id afterwards: key on first use, the
	// earlier key otherwise.
	PinHostKey(id string, key ssh.PublicKey) (ssh.PublicKey, error)
}

// MemoryHostKeyStore is an in-memory HostKeyStore. The zero value is not
// usable; call NewMemoryHostKeyStore.
type MemoryHostKeyStore struct {
	mu   sync.Mutex
	keys map[string]ssh.PublicKey
}

// NewMemoryHostKeyStore returns an empty in-memory store.
func NewMemoryHostKeyStore() *MemoryHostKeyStore {
	return &MemoryHostKeyStore{keys: map[string]ssh.PublicKey{}}
}

// HostKey returns the key pinned for id, or nil.
func (s *MemoryHostKeyStore) HostKey(id string) (ssh.PublicKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[id], nil
}

// PinHostKey pins key for id unless one is pinned; it returns the pinned key.
func (s *MemoryHostKeyStore) PinHostKey(id string, key ssh.PublicKey) (ssh.PublicKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.keys[id]; ok {
		return k, nil
	}
	s.keys[id] = key
	return key, nil
}

// Forget removes the pin of id (the instance was terminated).
func (s *MemoryHostKeyStore) Forget(id string) {
	s.mu.Lock()
	delete(s.keys, id)
	s.mu.Unlock()
}

// ForgetHostKey removes the pin of id (HostKeyForgetter); it never fails.
func (s *MemoryHostKeyStore) ForgetHostKey(_ context.Context, id string) error {
	s.Forget(id)
	return nil
}

type tofu struct{ store HostKeyStore }

// TrustOnFirstUse pins the first key a host presents to its identity (the
// instance's HostIdentity: one rental of one machine, not the address, so a
// new machine that reuses a dead one's IP, or a machine rented again under
// the same id, is pinned anew) in store, and refuses any other key for that
// identity afterwards with a *HostKeyMismatchError. It implements
// HostKeyForgetter when store does.
func TrustOnFirstUse(store HostKeyStore) HostKeyPolicy { return tofu{store: store} }

func (t tofu) Verifier(id, addr string) (HostKeyVerifier, error) {
	if t.store == nil {
		return HostKeyVerifier{}, errors.New("shim: TrustOnFirstUse without a store")
	}
	if id == "" {
		return HostKeyVerifier{}, errors.New("shim: TrustOnFirstUse needs an instance id")
	}
	known, err := t.store.HostKey(id)
	if err != nil {
		return HostKeyVerifier{}, fmt.Errorf("shim: host key store: %w", err)
	}
	cb := func(_ string, _ net.Addr, key ssh.PublicKey) error {
		got, err := t.store.PinHostKey(id, key)
		if err != nil {
			return fmt.Errorf("shim: host key store: %w", err)
		}
		if !keysEqual(got, key) {
			return mismatch(id, addr, key, got)
		}
		return nil
	}
	v := HostKeyVerifier{Callback: cb}
	if known != nil {
		v.Algorithms = algorithmsFor(known)
	}
	return v, nil
}

type knownHosts struct{ cb ssh.HostKeyCallback }

// KnownHosts checks host keys against OpenSSH known_hosts files (read once,
// now), by the dialled "host:port" ("[host]:port" entries for ports other
// than 22). A host listed with other keys is a *HostKeyMismatchError, an
// unlisted host an *UnknownHostError, a revoked key a
// *knownhosts.RevokedError. It fails when a file cannot be read or parsed.
func KnownHosts(files ...string) (HostKeyPolicy, error) {
	cb, err := knownhosts.New(files...)
	if err != nil {
		return nil, fmt.Errorf("shim: known_hosts: %w", err)
	}
	return knownHosts{cb: cb}, nil
}

// probeKey is a key no known_hosts lists, used to learn an entry's keys.
var probeKey = func() ssh.PublicKey {
	k, err := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	if err != nil {
		panic(err)
	}
	return k
}()

func (k knownHosts) Verifier(_, addr string) (HostKeyVerifier, error) {
	var want []ssh.PublicKey
	var ke *knownhosts.KeyError
	if err := k.cb(addr, &net.TCPAddr{}, probeKey); errors.As(err, &ke) {
		for _, w := range ke.Want {
			want = append(want, w.Key)
		}
	}
	cb := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := k.cb(hostname, remote, key)
		var ke *knownhosts.KeyError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &ke) && len(ke.Want) == 0:
			return &UnknownHostError{Addr: addr, Got: Fingerprint(key)}
		case errors.As(err, &ke):
			e := &HostKeyMismatchError{ID: knownhosts.Normalize(addr), Addr: addr, Got: Fingerprint(key)}
			for _, w := range ke.Want {
				e.Want = append(e.Want, fmt.Sprintf("%s (%s:%d)", Fingerprint(w.Key), w.Filename, w.Line))
			}
			return e
		}
		return err
	}
	return HostKeyVerifier{Callback: cb, Algorithms: algorithmsFor(want...)}, nil
}

type insecure struct{}

// InsecureIgnoreHostKey accepts any host key. Use it only where the network
// path is trusted; it is never a default.
func InsecureIgnoreHostKey() HostKeyPolicy { return insecure{} }

func (insecure) Verifier(string, string) (HostKeyVerifier, error) {
	//nolint:gosec // chosen explicitly by the caller
	return HostKeyVerifier{Callback: ssh.InsecureIgnoreHostKey()}, nil
}
