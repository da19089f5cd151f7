package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/millfleet/mill/internal/base/process"
)

// DefaultTable is the lease table's name `millctl setup` and the producers
// use by default (dynamolease keeps the leases in it).
const DefaultTable = "mill-leases"

// ErrNotHeld reports that the caller does not hold the lease it tried to
// renew or release: someone else holds it, or nobody does.
var ErrNotHeld = errors.New("lease: not held by caller")

// Holder identifies the holder of a lease. ID is what the conditions compare;
// the rest tells an operator (and a second invocation) who holds it.
type Holder struct {
	// ID is unique per holding process (see Self).
	ID string `json:"id"`
	// Identity is the holding process's host, PID and start time.
	process.Identity
	// Acquired is when the lease was last granted to this holder (a
	// re-acquire by the same holder refreshes it); Expires is when it lapses
	// unless renewed. Both are filled in by the implementation.
	Acquired time.Time `json:"acquired,omitzero"`
	Expires  time.Time `json:"expires,omitzero"`
}

// String describes h for a log line or a message to an operator, e.g.
// `host-a pid 4242 (started 2026-01-01T00:00:00Z, lease expires …, id …)`.
func (h Holder) String() string {
	if h.ID == "" {
		return "nobody"
	}
	s := h.Hostname
	if s == "" {
		s = "unknown host"
	}
	if h.PID != 0 {
		s += fmt.Sprintf(" pid %d", h.PID)
	}
	s += " ("
	if !h.Started.IsZero() {
		s += "started " + h.Started.UTC().Format(time.RFC3339) + ", "
	}
	if !h.Expires.IsZero() {
		s += "lease expires " + h.Expires.UTC().Format(time.RFC3339) + ", "
	}
	return s + "id " + h.ID + ")"
}

// Self returns a Holder for this process: hostname, pid, the given start
// time, and an ID made of them plus random bytes, so two processes (or two
// Loops in one test process) never share an ID.
func Self(started time.Time) Holder {
	p := process.Self(started.UTC().Truncate(time.Second))
	var b [6]byte
	_, _ = rand.Read(b[:])
	return Holder{ID: fmt.Sprintf("%s/%d/%s", p.Hostname, p.PID, hex.EncodeToString(b[:])), Identity: p}
}

// Lease is a store of named leases.
//
// Contract (every implementation passes leasetest.Run):
//
//   - Acquire grants name to holder when nobody holds it, when the current
//     record has expired, or when holder.ID already holds it (which extends
//     it). It returns granted=false with a nil error when someone else holds
//     an unexpired lease; current then describes that holder. When granted,
//     current is the caller's record with Acquired and Expires set. Among
//     concurrent acquirers of a free lease exactly one is granted.
//   - Expiry is kept with one-second resolution (DynamoDB's TTL is epoch
//     seconds): a lease granted for ttl lasts at least ttl, rounded up to the
//     next whole second. A lease is expired once the clock is past that
//     second.
//   - Renew sets the expiry of a lease the caller holds to now+ttl and
//     returns the updated record; it returns ErrNotHeld (wrapped) when
//     holderID is not the current holder (including when the record is gone).
//   - Release deletes the caller's lease; ErrNotHeld (wrapped) when holderID
//     is not the current holder.
//   - The time comes from the implementation's clock, not the server's, so
//     all holders should use synchronised clocks (true of EC2 and ECS).
//   - All methods are safe for concurrent use; cancelling ctx abandons the
//     call.
type Lease interface {
	Acquire(ctx context.Context, name string, holder Holder, ttl time.Duration) (granted bool, current Holder, err error)
	Renew(ctx context.Context, name, holderID string, ttl time.Duration) (Holder, error)
	Release(ctx context.Context, name, holderID string) error
}

// Expiry returns now+ttl rounded up to a whole second.
func Expiry(now time.Time, ttl time.Duration) time.Time {
	e := now.Add(ttl)
	if t := e.Truncate(time.Second); t.Before(e) {
		return t.Add(time.Second)
	}
	return e
}

// Expired reports whether a lease expiring at exp (whole seconds) has lapsed
// at now: now's epoch second is past exp's.
func Expired(exp, now time.Time) bool { return exp.Unix() < now.Unix() }

// CheckArgs validates the arguments every implementation takes: a name,
// a holder ID and (when needTTL) a positive ttl.
func CheckArgs(name, holderID string, ttl time.Duration, needTTL bool) error {
	var errs []error
	if name == "" {
		errs = append(errs, errors.New("empty lease name"))
	}
	if holderID == "" {
		errs = append(errs, errors.New("empty holder ID"))
	}
	if needTTL && ttl < time.Second {
		errs = append(errs, fmt.Errorf("ttl %v is shorter than one second", ttl))
	}
	return errors.Join(errs...)
}
