// Package changelog is the durable record of what operators changed through
// the console (docs/ARCHITECTURE.md, Console): one immutable entry per
// change — who, with which role, what, when, and the versions before and
// after — kept as one object per entry in S3 (the config bucket by default,
// which is versioned) or one file per entry in a local directory (the dev
// mode). Entries are never rewritten: Record refuses to replace one.
//
// The two implementations are sub-packages, s3changelog and fschangelog,
// both held to changelogtest.Run.
package changelog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/base/paging"
)

// Change is one entry.
type Change struct {
	// ID is assigned by Record; IDs sort newest first.
	ID string `json:"id"`
	// Time is when the change was made (Record sets it when zero).
	Time time.Time `json:"time"`
	// User and Role of whoever made it.
	User string `json:"user"`
	Role string `json:"role"`
	// Action names the kind of change ("policy.save", "policy.delete",
	// "accounts.list", …).
	Action string `json:"action"`
	// Target is what was changed (an account, a file).
	Target string `json:"target"`
	// Summary is one line for lists; Detail may hold more (a diff).
	Summary string `json:"summary"`
	Detail  string `json:"detail,omitempty"`
	// Before and After are the versions of the changed file, when there
	// are any ("" for none: a creation has no Before).
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
}

// Validate reports a missing field.
func (c Change) Validate() error {
	var errs []error
	for _, f := range [][2]string{{"user", c.User}, {"action", c.Action}, {"target", c.Target}} {
		if f[1] == "" {
			errs = append(errs, fmt.Errorf("changelog: missing %s", f[0]))
		}
	}
	return errors.Join(errs...)
}

// Errors.
var (
	// ErrBadToken: List was given an After token it did not make. It is
	// paging.ErrBadToken, the error of every listing's page tokens; the
	// change log's errors wrapping it say "changelog: bad page token".
	ErrBadToken = paging.ErrBadToken
)

// MaxPage is the most entries List returns at once.
const MaxPage = 200

// Log is the change log.
//
// Contract: Record stores c (after Validate) with a new ID and c.Time set
// when zero, and returns it; it never replaces an entry. List returns up to
// limit entries (1..MaxPage; ≤ 0 means 50) newest first, starting after
// the entry whose ID is after ("" = the newest), and the ID to pass as
// after for the next page ("" when no more follow). Safe for concurrent
// use.
type Log interface {
	Record(ctx context.Context, c Change) (Change, error)
	List(ctx context.Context, after string, limit int) ([]Change, string, error)
}

// newID returns an ID that sorts newest first: the milliseconds left until
// the year 2286 (13 digits) and a random suffix, so two changes in one
// millisecond never collide.
func newID(t time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%013d-%s", int64(math.Pow10(13))-1-t.UnixMilli(), hex.EncodeToString(b[:]))
}

// ValidID reports whether id has newID's shape (a token made by List).
func ValidID(id string) bool {
	left, right, ok := strings.Cut(id, "-")
	if !ok || len(left) != 13 || len(right) != 8 {
		return false
	}
	for _, r := range left {
		if r < '0' || r > '9' {
			return false
		}
	}
	_, err := hex.DecodeString(right)
	return err == nil
}

// PageSize is the page size of a List with limit (50 when ≤ 0, at most
// MaxPage).
func PageSize(limit int) int { return paging.Size(limit, 50, MaxPage) }

// Prepare validates c, gives it an ID and a time, and encodes it.
func Prepare(c Change) (Change, []byte, error) {
	if err := c.Validate(); err != nil {
		return Change{}, nil, err
	}
	if c.Time.IsZero() {
		c.Time = time.Now()
	}
	c.Time = c.Time.UTC()
	c.ID = newID(c.Time)
	b, err := json.Marshal(c)
	return c, b, err
}
