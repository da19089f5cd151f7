package auth

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
	"unicode"
)

// TokenPrefix starts every console token, so a leaked one is easy to
// recognise (and to scan for).
const TokenPrefix = "millc_"

// CookieName is the cookie the login form sets to the token.
const CookieName = "mill_console_token"

// maxTokenLen bounds what is hashed from a request.
const maxTokenLen = 256

// reloadEvery is how often the tokens file's modification time is looked
// at, so a removed line stops its token within seconds.
const reloadEvery = 2 * time.Second

// NewToken returns a new random token (32 bytes of crypto/rand).
func NewToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// HashToken returns how the tokens file stores token: "sha256:" and the
// hex SHA-256. A token is 256 random bits, so a fast hash is enough: there
// is nothing to guess that a slow hash would protect.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TokenLine returns the tokens-file line for a token of user with role.
func TokenLine(user string, role Role, token string) (string, error) {
	if err := checkUser(user); err != nil {
		return "", err
	}
	if role == RoleNone {
		return "", errors.New("auth: a token needs a role")
	}
	return fmt.Sprintf("%s %s %s", user, role, HashToken(token)), nil
}

func checkUser(u string) error {
	if u == "" || len(u) > 128 || strings.IndexFunc(u, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return fmt.Errorf("auth: user name %q: want 1 to 128 characters without spaces", u)
	}
	return nil
}

// tokenEntry is one line of the tokens file.
type tokenEntry struct {
	user string
	role Role
	hash [sha256.Size]byte
}

// parseTokens reads a tokens file: one token per line, "USER ROLE
// sha256:HEX"; blank lines and lines starting with # are ignored. Every
// problem is reported, as file:line.
func parseTokens(name string, data []byte) ([]tokenEntry, error) {
	var out []tokenEntry
	var errs []error
	seen := map[[sha256.Size]byte]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			errs = append(errs, fmt.Errorf("%s:%d: want USER ROLE sha256:HEX", name, n))
			continue
		}
		if err := checkUser(f[0]); err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", name, n, err))
		}
		role, err := ParseRole(f[1])
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", name, n, err))
		}
		hexHash, ok := strings.CutPrefix(f[2], "sha256:")
		raw, herr := hex.DecodeString(hexHash)
		if !ok || herr != nil || len(raw) != sha256.Size {
			errs = append(errs, fmt.Errorf("%s:%d: the token hash must be sha256: and 64 hex digits (never the token itself)", name, n))
			continue
		}
		e := tokenEntry{user: f[0], role: role}
		copy(e.hash[:], raw)
		if prev, dup := seen[e.hash]; dup {
			errs = append(errs, fmt.Errorf("%s:%d: the same token as line %d", name, n, prev))
			continue
		}
		seen[e.hash] = n
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	return out, errors.Join(errs...)
}

// Tokens is the tokens-file mode. The file is read at start (an invalid
// file is an error) and again whenever its modification time changes; a
// file that turns invalid keeps the last good list and is logged by the
// caller through Err.
type Tokens struct {
	path string
	now  func() time.Time

	mu      sync.Mutex
	entries []tokenEntry
	modTime time.Time
	checked time.Time
	lastErr error
}

var _ Authenticator = (*Tokens)(nil)

// NewTokens reads the tokens file at path.
func NewTokens(path string) (*Tokens, error) {
	t := &Tokens{path: path, now: time.Now}
	if err := t.load(); err != nil {
		return nil, err
	}
	if len(t.entries) == 0 {
		return nil, fmt.Errorf("auth: %s holds no token (mint one with `millctl console token`)", path)
	}
	return t, nil
}

func (t *Tokens) load() error {
	info, err := os.Stat(t.path)
	if err != nil {
		return fmt.Errorf("auth: tokens file: %w", err)
	}
	if info.Mode().Perm()&0o002 != 0 {
		return fmt.Errorf("auth: tokens file %s is writable by everyone", t.path)
	}
	data, err := os.ReadFile(t.path)
	if err != nil {
		return fmt.Errorf("auth: tokens file: %w", err)
	}
	entries, err := parseTokens(t.path, data)
	if err != nil {
		return err
	}
	t.entries, t.modTime = entries, info.ModTime()
	return nil
}

// refresh re-reads the file when it changed (at most every reloadEvery).
func (t *Tokens) refresh() {
	now := t.now()
	if now.Sub(t.checked) < reloadEvery {
		return
	}
	t.checked = now
	info, err := os.Stat(t.path)
	if err != nil {
		t.lastErr = err
		return
	}
	if info.ModTime().Equal(t.modTime) {
		return
	}
	t.lastErr = t.load()
}

// Err returns the error of the last reload ("" list kept), or nil.
func (t *Tokens) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lastErr
}

// Mode implements Authenticator.
func (t *Tokens) Mode() string { return "tokens" }

// Authenticate implements Authenticator: the token comes from the
// "Authorization: Bearer" header or the login cookie.
func (t *Tokens) Authenticate(r *http.Request) (*User, error) {
	tok := ""
	if h := r.Header.Get("Authorization"); h != "" {
		b, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return nil, fmt.Errorf("%w: Authorization is not a bearer token", ErrRefused)
		}
		tok = strings.TrimSpace(b)
	} else if c, err := r.Cookie(CookieName); err == nil {
		tok = c.Value
	}
	if tok == "" {
		return nil, ErrNoCredentials
	}
	return t.Check(tok)
}

// Check returns the user of a token.
func (t *Tokens) Check(tok string) (*User, error) {
	if len(tok) > maxTokenLen || !strings.HasPrefix(tok, TokenPrefix) {
		return nil, fmt.Errorf("%w: not a console token", ErrRefused)
	}
	sum := sha256.Sum256([]byte(tok))
	t.mu.Lock()
	t.refresh()
	entries := t.entries
	t.mu.Unlock()
	var found *tokenEntry
	for i := range entries { // compare every entry: no early exit to time
		if subtle.ConstantTimeCompare(entries[i].hash[:], sum[:]) == 1 {
			found = &entries[i]
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%w: unknown token", ErrRefused)
	}
	return &User{Name: found.user, Role: found.role, Mode: t.Mode()}, nil
}
