package vultr

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/crypto/ssh"
)

// CloudConfig is the cloud-init user_data that installs keys (authorized_keys
// lines, trimmed of surrounding space) for root:
//
//	#cloud-config
//	ssh_authorized_keys:
//	  - "ssh-ed25519 AAAA... user@host"
//
// Each key is a YAML double-quoted scalar on one line, so no key text,
// a newline or ": " included, can add or change a cloud-config entry.
func CloudConfig(keys []string) []byte {
	var b strings.Builder
	b.WriteString("#cloud-config\n")
	if len(keys) > 0 {
		b.WriteString("ssh_authorized_keys:\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "  - %s\n", yamlQuote(strings.TrimSpace(k)))
		}
	}
	return []byte(b.String())
}

// yamlQuote writes s as a YAML double-quoted scalar on one line: printable
// ASCII as is except `"` and `\`, which are backslash-escaped; \t, \n, \r as
// such; other control bytes as \xXX; every non-ASCII rune as \uXXXX or
// \UXXXXXXXX (an invalid UTF-8 byte as \ufffd). These escapes are YAML 1.1
// and 1.2, as read by cloud-init (PyYAML).
func yamlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// CheckSSHKey returns nil when key, trimmed of surrounding space, is exactly
// one authorized_keys line that golang.org/x/crypto/ssh ParseAuthorizedKey
// accepts (options, type, base64 key, optional comment). A line break or any
// other control character but tab, or text that is not UTF-8, is refused:
// cloud-init writes the line to root's authorized_keys as given. Errors are
// fleet.ErrInvalidRequest.
func CheckSSHKey(key string) error {
	if p := sshKeyProblem(key); p != "" {
		return invalid("%s", p)
	}
	return nil
}

// checkSSHKeys is CheckSSHKey of each key, naming the first bad one by index.
func checkSSHKeys(keys []string) error {
	for i, k := range keys {
		if p := sshKeyProblem(k); p != "" {
			return invalid("SSH key %d: %s", i, p)
		}
	}
	return nil
}

// sshKeyProblem says what is wrong with an authorized key, "" when nothing.
func sshKeyProblem(key string) string {
	line := strings.TrimSpace(key)
	if !utf8.ValidString(line) {
		return "not UTF-8"
	}
	for i, r := range line {
		if r != '\t' && unicode.IsControl(r) {
			return fmt.Sprintf("control character %U at byte %d (one authorized_keys line expected)", r, i)
		}
	}
	_, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return "not an authorized_keys line: " + err.Error()
	}
	if len(strings.TrimSpace(string(rest))) > 0 {
		return "more than one authorized_keys line"
	}
	return ""
}
