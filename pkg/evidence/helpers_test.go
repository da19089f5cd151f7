package evidence

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/blob"
	"golang.org/x/mod/sumdb/note"
)

// testKey generates a key pair for a test log.
func testKey(t testing.TB) (skey string, v note.Verifier) {
	t.Helper()
	skey, vkey, err := GenerateKey("mill.test/evidence")
	if err != nil {
		t.Fatal(err)
	}
	v, err = NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return skey, v
}

var t0 = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

// fixityEvent is a valid fixity check event number i.
func fixityEvent(i int) *Event {
	return &Event{
		V: FormatVersion, ID: EventID("bit", "run-1", fmt.Sprint(i)), Type: FixityCheck,
		Time:    FormatTime(t0.Add(time.Duration(i) * time.Millisecond)),
		Object:  Copy{Account: "acme", Store: "s3-east", Space: "photos", ContentID: fmt.Sprintf("dir/item-%d.tif", i)},
		Fixity:  &Fixity{Algorithm: MD5, Digest: fmt.Sprintf("%032x", i), Expected: fmt.Sprintf("%032x", i), Method: MethodRead},
		Outcome: Success,
		Agent:   Agent{Kind: Software, Name: "workman", Instance: "i-0abc", Version: "v1.2.3"},
	}
}

func fixityEvents(from, n int) []*Event {
	es := make([]*Event, n)
	for i := range es {
		es[i] = fixityEvent(from + i)
	}
	return es
}

// faultyBlobs fails Put: the put numbered failAt (0-based, counting every
// Put) and every one after it, before writing (after: false) or after
// writing (after: true, the crash after the write but before its caller
// heard of it).
type faultyBlobs struct {
	blob.Store
	mu     sync.Mutex
	puts   int
	failAt int
	after  bool
}

var errInjected = errors.New("injected fault")

func (f *faultyBlobs) Put(ctx context.Context, key string, data []byte) error {
	f.mu.Lock()
	n := f.puts
	f.puts++
	f.mu.Unlock()
	if n < f.failAt {
		return f.Store.Put(ctx, key, data)
	}
	if f.after {
		if err := f.Store.Put(ctx, key, data); err != nil {
			return err
		}
	}
	return fmt.Errorf("put %s: %w", key, errInjected)
}

// leafIDs reads every event ID of the log up to its latest checkpoint.
func leafIDs(t *testing.T, b blob.Store, v note.Verifier) []string {
	t.Helper()
	ctx := context.Background()
	msg, err := b.Get(ctx, latestKey)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := OpenCheckpoint(msg, v)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for start := int64(0); start < cp.Size; start += 256 {
		leaves, err := readDataTile(ctx, b, dataTile(start, cp.Size))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range leaves {
			e, err := ParseCanonical(l)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// mustVerify verifies the log and fails the test on any problem.
func mustVerify(t *testing.T, b blob.Store, v note.Verifier) *Report {
	t.Helper()
	r, err := Verify(context.Background(), b, v, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		var s []string
		for _, p := range r.Problems {
			s = append(s, p.String())
		}
		t.Fatalf("verify: %d problems:\n%s", len(s), strings.Join(s, "\n"))
	}
	return r
}
