package bit

import (
	"context"
	"errors"
	"fmt"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
)

// No false alarms. A read can go wrong without an error: a proxy or a
// network path that cuts a response and frames what is left as the whole
// of it hands the checker fewer (or other) bytes than the store holds, and
// their MD5 disagrees with the copy's checksum as a sour copy's would.
// So before a check records that the bytes disagree, it reads them again
// (Observer.readAgain): from byte 0, over a new connection
// (storage.WithNewConnection: no connection of the first read is
// reused), and pinned to the revision the first read saw (storage.Reopen:
// If-Match its ETag on S3), so the second read sees the same version or
// none. The second observation is the one decided on: when it agrees, the
// copy is healthy and the fault was the read's; when it disagrees too,
// the disagreement stands. Either way the row's details say a re-read was
// needed and what the first read hashed. An item rewritten between the
// reads (ErrChanged) is an ordinary error: Workman retries the whole
// check, and nothing of the first read is recorded. The price: a copy
// that did go sour is read twice (its row's Bytes count the second read;
// the first is in its details).

// readDisagrees reports whether the bytes were read and their MD5 (C)
// disagrees with what the storage side says of them: with S, or — when
// the provider reported no checksum and Mill recorded none, so S cannot
// vouch for C — with I or A. These are the observations whose actions
// (a FAILURE, a BIT_ERROR, an audit or index entry from the bytes' MD5)
// rest on C being what the store holds.
func (o *Observation) readDisagrees() bool {
	s := o.Sums
	switch {
	case !s.Found || !s.ContentRead:
		return false
	case s.Storage != "":
		return s.Content != s.Storage
	}
	return (s.Index != "" && s.Index != s.Content) || (s.Audit != "" && s.Audit != s.Content)
}

// readAgain observes the item again with a second read of the revision
// the first observation saw (see above) and returns the second
// observation, its details saying what the first read found.
func (ob *Observer) readAgain(ctx context.Context, b task.Bit, prov storage.Provider, first *Observation) (*Observation, error) {
	revision := first.Info.Revision
	o := &Observation{StoreKind: first.StoreKind, Reread: true}
	err := ob.observeStorage(ctx, b, prov, true, observeOpts{read: func() (*storage.Info, *storage.Sums, error) {
		return ob.reread(ctx, prov, b.SpaceID, b.ContentID, revision)
	}}, o)
	if errors.Is(err, storage.ErrChanged) {
		return nil, fmt.Errorf("bit: re-read %s/%s: rewritten since the first read, whose checksum disagreed; check again: %w",
			b.SpaceID, storage.ShortID(b.ContentID), err)
	}
	if err == nil {
		err = ob.observe(ctx, b, o)
	}
	if err != nil {
		return nil, err
	}
	verdict := "the re-read agrees: the first read was faulty"
	switch {
	case !o.Sums.Found:
		verdict = "the re-read found the item gone"
	case !o.Sums.ContentRead:
		verdict = "the re-read could not read the bytes"
	case o.readDisagrees():
		verdict = "the re-read confirms the disagreement"
	}
	rev := revision
	if rev == "" {
		rev = "none reported"
	}
	o.Details = append(o.Details, fmt.Sprintf("re-read (new connection, revision %s): the first read hashed %d bytes to %s; %s",
		rev, first.Bytes, first.Sums.Content, verdict))
	return o, nil
}
