package evidence

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Checkpoint is a signed statement of the log's size and root hash.
type Checkpoint struct {
	Origin string // the log's name: the signing key's name
	Size   int64
	Root   tlog.Hash
	// Signed is the note as stored: the checkpoint text and its signature.
	Signed []byte
}

// Tree is the checkpoint's tree.
func (c *Checkpoint) Tree() tlog.Tree { return tlog.Tree{N: c.Size, Hash: c.Root} }

// checkpointText is the C2SP tlog-checkpoint body: origin, decimal size,
// base64 root hash, one a line.
func checkpointText(origin string, size int64, root tlog.Hash) string {
	return fmt.Sprintf("%s\n%d\n%s\n", origin, size, base64.StdEncoding.EncodeToString(root[:]))
}

// signCheckpoint signs a checkpoint of the tree with s; the origin is the
// signer's name.
func signCheckpoint(s note.Signer, size int64, root tlog.Hash) (*Checkpoint, error) {
	msg, err := note.Sign(&note.Note{Text: checkpointText(s.Name(), size, root)}, s)
	if err != nil {
		return nil, fmt.Errorf("evidence: sign checkpoint: %w", err)
	}
	return &Checkpoint{Origin: s.Name(), Size: size, Root: root, Signed: msg}, nil
}

// OpenCheckpoint checks a signed checkpoint with the verifier and parses
// it: the signature must be the verifier's and the origin its name.
func OpenCheckpoint(msg []byte, v note.Verifier) (*Checkpoint, error) {
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) != 4 || lines[3] != "" {
		return nil, errors.New("not a checkpoint: want origin, size and root hash lines")
	}
	if lines[0] != v.Name() {
		return nil, fmt.Errorf("origin %q is not the key's name %q", lines[0], v.Name())
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return nil, fmt.Errorf("size %q is not a canonical decimal", lines[1])
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		return nil, fmt.Errorf("root hash %q is not %d bytes of base64", lines[2], tlog.HashSize)
	}
	c := &Checkpoint{Origin: lines[0], Size: size, Signed: msg}
	copy(c.Root[:], raw)
	return c, nil
}

// GenerateKey makes a new Ed25519 note key pair for a log named name: the
// signer key (secret: configuration, never the repository) and the
// verifier key (public: what auditors get).
func GenerateKey(name string) (signer, verifier string, err error) {
	if name == "" || len(name) > 256 || !utf8.ValidString(name) || strings.Contains(name, "+") ||
		strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "", "", fmt.Errorf("evidence: key name %q: want 1 to 256 bytes of UTF-8 without spaces, control characters or +", name)
	}
	return note.GenerateKey(nil, name)
}

// NewSigner parses a note signer key ("PRIVATE+KEY+name+hash+key").
func NewSigner(skey string) (note.Signer, error) {
	s, err := note.NewSigner(strings.TrimSpace(skey))
	if err != nil {
		return nil, fmt.Errorf("evidence: signer key: %w", err)
	}
	return s, nil
}

// NewVerifier parses a note verifier key ("name+hash+key").
func NewVerifier(vkey string) (note.Verifier, error) {
	v, err := note.NewVerifier(strings.TrimSpace(vkey))
	if err != nil {
		return nil, fmt.Errorf("evidence: verifier key: %w", err)
	}
	return v, nil
}

// LoadSigner reads the signer key from the file named by path, or when
// path is empty from the environment variable env (the key itself). A key
// file must not be readable by group or others.
func LoadSigner(path, env string, getenv func(string) string) (note.Signer, error) {
	k, err := LoadSignerKey(path, env, getenv)
	if err != nil {
		return nil, err
	}
	return NewSigner(k)
}

// LoadSignerKey reads the signer key's text as LoadSigner does (what Open
// takes), checking that it is a signer key.
func LoadSignerKey(path, env string, getenv func(string) string) (string, error) {
	if path == "" {
		if k := getenv(env); k != "" {
			_, err := NewSigner(k)
			return k, err
		}
		return "", fmt.Errorf("evidence: no signer key: set a key file or %s", env)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("evidence: signer key: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("evidence: signer key %s is readable by others (mode %v): chmod 600", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("evidence: signer key: %w", err)
	}
	_, err = NewSigner(string(b))
	return string(b), err
}

// LoadVerifier reads a verifier key file.
func LoadVerifier(path string) (note.Verifier, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("evidence: verifier key: %w", err)
	}
	return NewVerifier(string(b))
}
