package bit_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/processors/bit"
	bt "github.com/millfleet/mill/processors/bit/bittest"
)

// cutting is a store whose first `cut` reads hand over only the first
// half of the bytes, framed as the whole item (the Info says that size):
// a read that goes wrong without an error. Each read's revision is
// revisions[i] (the last one repeats; none: the provider's own).
type cutting struct {
	storage.Provider
	mu        sync.Mutex
	cut       int
	revisions []string
	reads     []bool // per Get: under storage.WithNewConnection
	bare      bool   // report no checksum (no provider digest, no recorded MD5)
}

func (c *cutting) Get(ctx context.Context, sp, id string) (io.ReadCloser, *storage.Info, error) {
	rc, info, err := c.Provider.Get(ctx, sp, id)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	n := len(c.reads)
	c.reads = append(c.reads, storage.NewConnection(ctx))
	cut := n < c.cut
	if len(c.revisions) > 0 {
		info.Revision = c.revisions[min(n, len(c.revisions)-1)]
	}
	c.mu.Unlock()
	if c.bare {
		info.Checksum, info.ProviderChecksum = "", ""
	}
	if !cut {
		return rc, info, nil
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, nil, err
	}
	short := *info
	short.Size = int64(len(b) / 2)
	return io.NopCloser(bytes.NewReader(b[:len(b)/2])), &short, nil
}

func (c *cutting) gets() []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]bool(nil), c.reads...)
}

func withCutting(e *bt.Env, c *cutting) {
	e.Wrap("1", func(p storage.Provider) storage.Provider { c.Provider = p; return c })
}

// TestTruncatedReadIsReread: a read whose checksum disagrees because the
// read went wrong is read again over a new connection, and the item,
// healthy, is recorded as such: SUCCESS, case 1, the bytes of the read
// that made the verdict, a note that a re-read was needed; no BIT_ERROR.
func TestTruncatedReadIsReread(t *testing.T) {
	e := bt.New(t)
	healthy(e, true)
	c := &cutting{cut: 1}
	withCutting(e, c)
	if err := e.Processor(nil).Handle(t.Context(), bt.BitTask(0)); err != nil {
		t.Fatal(err)
	}
	r := e.Row()
	if r == nil || r.Result != bitlog.ResultSuccess || r.Case != 1 || r.ContentChecksum != bt.GoodMD5 {
		t.Fatalf("row %+v; want SUCCESS case 1 with C the item's MD5", r)
	}
	half := bt.MD5Hex(bt.Good[:len(bt.Good)/2])
	if !strings.Contains(r.Details, "re-read") || !strings.Contains(r.Details, "the first read was faulty") || !strings.Contains(r.Details, half) {
		t.Errorf("details %q; want the re-read and the first read's %s", r.Details, half)
	}
	if r.Method != bitlog.MethodRead || r.Bytes != int64(len(bt.Good)) || r.Archived {
		t.Errorf("method %q bytes %d archived %v; want read, %d, false", r.Method, r.Bytes, r.Archived, len(bt.Good))
	}
	if got := c.gets(); len(got) != 2 || got[0] || !got[1] {
		t.Errorf("reads (new connection?) %v; want [false true]", got)
	}
	if bes := e.BitErrors(); len(bes) != 0 {
		t.Errorf("BIT_ERROR tasks %+v for a healthy item", bes)
	}
}

// TestSourCopyConfirmedByReread: a copy whose bytes did go sour disagrees
// on the re-read too: the failure stands (case 2, BIT_ERROR), the row says
// the re-read confirmed it.
func TestSourCopyConfirmedByReread(t *testing.T) {
	e := bt.New(t)
	healthy(e, true)
	e.Sour("1")
	c := &cutting{}
	withCutting(e, c)
	if err := e.Processor(nil).Handle(t.Context(), bt.BitTask(0)); err != nil {
		t.Fatal(err)
	}
	r := e.Row()
	if r == nil || r.Result != bitlog.ResultFailure || r.Case != 2 || r.ContentChecksum != bt.SourMD5 {
		t.Fatalf("row %+v; want FAILURE case 2", r)
	}
	if !strings.Contains(r.Details, "the re-read confirms the disagreement") {
		t.Errorf("details %q; want the re-read's confirmation", r.Details)
	}
	if r.Method != bitlog.MethodRead || r.Bytes != int64(len(bt.Good)) {
		t.Errorf("method %q bytes %d", r.Method, r.Bytes)
	}
	if got := c.gets(); len(got) != 2 || !got[1] {
		t.Errorf("reads %v; want a second one over a new connection", got)
	}
	if bes := e.BitErrors(); len(bes) != 1 || bes[0].Case != 2 || !strings.Contains(bes[0].Description, "re-read") {
		t.Errorf("BIT_ERROR tasks %+v; want one of case 2 naming the re-read", bes)
	}
}

// TestRereadOnlyOnDisagreement: an item whose read agrees is read once;
// the row carries the method and bytes. A store configured unreadable
// hashes nothing: method stored, 0 bytes.
func TestRereadOnlyOnDisagreement(t *testing.T) {
	for _, unreadable := range []bool{false, true} {
		e := bt.New(t)
		healthy(e, false)
		c := &cutting{}
		withCutting(e, c)
		p := e.Processor(nil)
		if unreadable {
			p = e.Processor(func(cfg *bit.Config) { cfg.UnreadableStores = []string{bt.Account + "/1"} })
		}
		if err := p.Handle(t.Context(), bt.BitTask(0)); err != nil {
			t.Fatal(err)
		}
		r := e.Row()
		if r == nil || r.Result != bitlog.ResultSuccess || r.Case != 1 || strings.Contains(r.Details, "re-read") {
			t.Fatalf("unreadable %v: row %+v; want SUCCESS case 1 without a re-read", unreadable, r)
		}
		wantMethod, wantBytes, wantGets := bitlog.MethodRead, int64(len(bt.Good)), 1
		if unreadable {
			wantMethod, wantBytes, wantGets = bitlog.MethodStored, 0, 0
		}
		if r.Method != wantMethod || r.Bytes != wantBytes || r.Archived {
			t.Errorf("unreadable %v: method %q bytes %d archived %v; want %q %d false", unreadable, r.Method, r.Bytes, r.Archived, wantMethod, wantBytes)
		}
		if got := c.gets(); len(got) != wantGets {
			t.Errorf("unreadable %v: %d reads; want %d", unreadable, len(got), wantGets)
		}
	}
}

// TestRereadPinsTheRevision: when the item was rewritten between the two
// reads (another revision), nothing is recorded or sent: the check is an
// ordinary error, retried from the start.
func TestRereadPinsTheRevision(t *testing.T) {
	e := bt.New(t)
	healthy(e, true)
	c := &cutting{cut: 1, revisions: []string{"r1", "r2"}}
	withCutting(e, c)
	err := e.Processor(nil).Handle(t.Context(), bt.BitTask(0))
	if err == nil || !strings.Contains(err.Error(), "rewritten since the first read") {
		t.Fatalf("Handle: %v; want the re-read's refusal of another revision", err)
	}
	if r := e.Row(); r != nil {
		t.Errorf("row %+v recorded from a read of a revision that is gone", r)
	}
	if bes := e.BitErrors(); len(bes) != 0 {
		t.Errorf("BIT_ERROR tasks %+v", bes)
	}
	if as := e.Audits(); len(as) != 0 {
		t.Errorf("AUDIT tasks %+v", as)
	}
}

// TestRereadWithoutProviderChecksum: with no S (no provider checksum, no
// recorded MD5) a faulty read disagrees with I and A; it is read again
// before the bytes' MD5 goes anywhere (no case 10 AUDIT from a bad read).
func TestRereadWithoutProviderChecksum(t *testing.T) {
	e := bt.New(t)
	healthy(e, false)
	c := &cutting{cut: 1, bare: true}
	withCutting(e, c)
	if err := e.Processor(nil).Handle(t.Context(), bt.BitTask(2)); err != nil {
		t.Fatal(err)
	}
	r := e.Row()
	if r == nil || r.Result != bitlog.ResultSuccess || r.ContentChecksum != bt.GoodMD5 || !strings.Contains(r.Details, "the first read was faulty") {
		t.Fatalf("row %+v; want SUCCESS after a re-read", r)
	}
	if as := e.Audits(); len(as) != 0 {
		t.Errorf("AUDIT tasks %+v from a faulty read", as)
	}
}
