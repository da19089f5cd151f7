package bit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/bit"
	bt "github.com/millfleet/mill/processors/bit/bittest"
)

var props = map[string]string{"creator": "bob"}

// healthy puts the good item in store 1 (and store 2 when dup), with a
// matching index row and ADD_CONTENT audit entry.
func healthy(e *bt.Env, dup bool) {
	e.Put("1", bt.Good)
	if dup {
		e.Put("2", bt.Good)
	}
	e.SetIndex(bt.GoodMD5)
	e.SetAudit(task.ActionAddContent, bt.GoodMD5, props)
}

type want struct {
	result     bitlog.Result // "" = no row
	caseNumber int
	bitError   bool
	resolvable bool
	audit      bool
	c, s, i, a string
}

func TestCases(t *testing.T) {
	C := bt.GoodMD5
	tests := []struct {
		name       string
		setup      func(e *bt.Env)
		unreadable bool
		want       want
	}{
		{"1 all agree", func(e *bt.Env) { healthy(e, false) }, false,
			want{result: bitlog.ResultSuccess, caseNumber: 1, c: C, s: C, i: C, a: C}},
		{"1 content N/A", func(e *bt.Env) { healthy(e, false) }, true,
			want{result: bitlog.ResultSuccess, caseNumber: 1, s: C, i: C, a: C}},
		{"2 sour byte, copy on store 2", func(e *bt.Env) { healthy(e, true); e.Sour("1") }, false,
			want{result: bitlog.ResultFailure, caseNumber: 2, bitError: true, resolvable: true, c: bt.SourMD5, s: C, i: C, a: C}},
		{"2 sour byte, no other copy", func(e *bt.Env) { healthy(e, false); e.Sour("1") }, false,
			want{result: bitlog.ResultFailure, caseNumber: 2, bitError: true, resolvable: false, c: bt.SourMD5, s: C, i: C, a: C}},
		{"2 sour byte, store 2 copy also different", func(e *bt.Env) {
			healthy(e, false)
			e.Put("2", []byte("something else"))
			e.Sour("1")
		}, false, want{result: bitlog.ResultFailure, caseNumber: 2, bitError: true, resolvable: false, c: bt.SourMD5, s: C, i: C, a: C}},
		{"3 provider checksum wrong", func(e *bt.Env) { healthy(e, true); e.BreakStorageChecksum("1", bt.OldMD5) }, false,
			want{result: bitlog.ResultFailure, caseNumber: 3, bitError: true, resolvable: false, c: C, s: bt.OldMD5, i: C, a: C}},
		{"4 content N/A, provider checksum wrong (last attempt)", func(e *bt.Env) {
			healthy(e, true)
			e.BreakStorageChecksum("1", bt.OldMD5)
		}, true, want{result: bitlog.ResultError, caseNumber: 4, bitError: true, resolvable: true, s: bt.OldMD5, i: C, a: C}},
		{"5 index wrong", func(e *bt.Env) {
			e.Put("1", bt.Good)
			e.SetIndex(bt.OldMD5)
			e.SetAudit(task.ActionAddContent, bt.GoodMD5, props)
		}, false, want{result: bitlog.ResultFailure, caseNumber: 5, c: C, s: C, i: bt.OldMD5, a: C}},
		{"5 index missing", func(e *bt.Env) {
			e.Put("1", bt.Good)
			e.SetAudit(task.ActionAddContent, bt.GoodMD5, props)
		}, false, want{result: bitlog.ResultFailure, caseNumber: 5, c: C, s: C, a: C}},
		{"6 audit wrong", func(e *bt.Env) {
			e.Put("1", bt.Good)
			e.SetIndex(bt.GoodMD5)
			e.SetAudit(task.ActionAddContent, bt.OldMD5, props)
		}, false, want{result: bitlog.ResultFailure, caseNumber: 6, bitError: true, resolvable: true, c: C, s: C, i: C, a: bt.OldMD5}},
		{"7 audit missing", func(e *bt.Env) { e.Put("1", bt.Good); e.SetIndex(bt.GoodMD5) }, false,
			want{result: bitlog.ResultFailure, caseNumber: 7, audit: true, c: C, s: C, i: C}},
		{"7 latest audit is DELETE_CONTENT", func(e *bt.Env) {
			e.Put("1", bt.Good)
			e.SetIndex(bt.GoodMD5)
			e.SetAudit(task.ActionDeleteContent, "", nil)
		}, false, want{result: bitlog.ResultFailure, caseNumber: 7, audit: true, c: C, s: C, i: C}},
		{"8 removed from storage (last attempt)", func(e *bt.Env) { healthy(e, true); e.Remove("1") }, false,
			want{result: bitlog.ResultError, caseNumber: 8, bitError: true, resolvable: true, i: C, a: C}},
		{"9 not captured (last attempt)", func(e *bt.Env) { e.Put("1", bt.Good) }, false,
			want{result: bitlog.ResultError, caseNumber: 9, audit: true, c: C, s: C}},
		{"10 updated, not captured (last attempt)", func(e *bt.Env) {
			e.Put("1", bt.Good)
			e.SetIndex(bt.OldMD5)
			e.SetAudit(task.ActionAddContent, bt.OldMD5, props)
		}, false, want{result: bitlog.ResultError, caseNumber: 10, audit: true, c: C, s: C, i: bt.OldMD5, a: bt.OldMD5}},
		{"1 Java DuraStore: SET_CONTENT_PROPERTIES without a checksum after ADD_CONTENT", func(e *bt.Env) {
			healthy(e, false)
			e.AddAudit(time.Minute, task.ActionSetContentProperties, "", props)
		}, false, want{result: bitlog.ResultSuccess, caseNumber: 1, c: C, s: C, i: C, a: C}},
		{"6 audit wrong under a SET_CONTENT_PROPERTIES without a checksum", func(e *bt.Env) {
			e.Put("1", bt.Good)
			e.SetIndex(bt.GoodMD5)
			e.SetAudit(task.ActionAddContent, bt.OldMD5, props)
			e.AddAudit(time.Minute, task.ActionSetContentProperties, "", props)
		}, false, want{result: bitlog.ResultFailure, caseNumber: 6, bitError: true, resolvable: true, c: C, s: C, i: C, a: bt.OldMD5}},
		{"7 DELETE_CONTENT then SET_CONTENT_PROPERTIES without a checksum", func(e *bt.Env) {
			e.Put("1", bt.Good)
			e.SetIndex(bt.GoodMD5)
			e.SetAudit(task.ActionAddContent, bt.GoodMD5, props)
			e.AddAudit(time.Minute, task.ActionDeleteContent, "", nil)
			e.AddAudit(2*time.Minute, task.ActionSetContentProperties, "", props)
		}, false, want{result: bitlog.ResultFailure, caseNumber: 7, audit: true, c: C, s: C, i: C}},
		{"11 deleted everywhere", func(e *bt.Env) { e.Put("1", bt.Good); e.Remove("1") }, false,
			want{result: bitlog.ResultSuccess, caseNumber: 11}},
		{"11 space never existed", func(e *bt.Env) {}, false,
			want{result: bitlog.ResultSuccess, caseNumber: 11}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := bt.New(t)
			tt.setup(e)
			p := e.Processor(func(c *bit.Config) {
				if tt.unreadable {
					c.UnreadableKinds = []storage.Kind{storage.KindFS}
				}
			})
			// The last attempt (2 of MaxAttempts 3) takes every case's
			// final outcome.
			if err := p.Handle(context.Background(), bt.BitTask(2)); err != nil {
				t.Fatalf("Handle: %v", err)
			}
			w := tt.want
			row := e.Row()
			if row == nil {
				t.Fatal("no bit log row")
			}
			if row.Result != w.result || row.Case != w.caseNumber {
				t.Errorf("row %s case %d, want %s case %d (%s)", row.Result, row.Case, w.result, w.caseNumber, row.Details)
			}
			if row.ContentChecksum != w.c || row.StorageChecksum != w.s || row.IndexChecksum != w.i || row.AuditChecksum != w.a {
				t.Errorf("row C/S/I/A = %q %q %q %q, want %q %q %q %q", row.ContentChecksum, row.StorageChecksum,
					row.IndexChecksum, row.AuditChecksum, w.c, w.s, w.i, w.a)
			}
			if row.StoreKind != "fs" || row.RunID != bt.RunID {
				t.Errorf("row kind %q run %q", row.StoreKind, row.RunID)
			}
			bes := e.BitErrors()
			if got := len(bes) == 1; got != w.bitError || len(bes) > 1 {
				t.Fatalf("BIT_ERROR tasks %+v, want %v", bes, w.bitError)
			}
			if w.bitError {
				be := bes[0]
				if be.Case != w.caseNumber || be.InternallyResolvable != w.resolvable || be.RunID != bt.RunID {
					t.Errorf("BIT_ERROR case %d resolvable %v run %q, want case %d resolvable %v",
						be.Case, be.InternallyResolvable, be.RunID, w.caseNumber, w.resolvable)
				}
				if be.ContentChecksum != w.c || be.StorageChecksum != w.s || be.IndexChecksum != w.i || be.AuditChecksum != w.a {
					t.Errorf("BIT_ERROR checksums %+v", be)
				}
			}
			audits := e.Audits()
			if got := len(audits) == 1; got != w.audit || len(audits) > 1 {
				t.Fatalf("AUDIT tasks %+v, want %v", audits, w.audit)
			}
			if w.audit {
				a := audits[0]
				if a.Action != task.ActionAddContent || a.ContentChecksum != bt.GoodMD5 || a.ContentMimetype != "text/plain" ||
					a.ContentSize == nil || *a.ContentSize != int64(len(bt.Good)) || a.ContentProperties["creator"] != "bob" ||
					a.StoreType != "fs" || a.UserID != bit.DefaultUserID || a.StoreID != "1" {
					t.Errorf("AUDIT task %+v", a)
				}
			}
		})
	}
}

// TestRecheckTiming: the waiting cases wait (RetryAfter(RecheckDelay)) once,
// on the penultimate attempt, as DuraCloud's decision table says; earlier attempts are
// plain retries; nothing is recorded or sent before the last attempt.
func TestRecheckTiming(t *testing.T) {
	setups := map[int]func(e *bt.Env){
		4: func(e *bt.Env) { healthy(e, false); e.BreakStorageChecksum("1", bt.OldMD5) },
		8: func(e *bt.Env) { healthy(e, false); e.Remove("1") },
		9: func(e *bt.Env) { e.Put("1", bt.Good) },
		10: func(e *bt.Env) {
			e.Put("1", bt.Good)
			e.SetIndex(bt.OldMD5)
			e.SetAudit(task.ActionAddContent, bt.OldMD5, nil)
		},
	}
	for _, tc := range []struct {
		name     string
		max      int
		delay    time.Duration
		retryAt  []int // plain retries (Workman's backoff), no wait
		waitAt   []int // the penultimate attempt: RetryAfter(RecheckDelay)
		finalAt  int
		wantCfgD time.Duration
	}{
		{"defaults", 0, 0, []int{0}, []int{1}, 2, bit.DefaultRecheckDelay},
		{"max 5, 2s", 5, 2 * time.Second, []int{0, 1, 2}, []int{3}, 4, 2 * time.Second},
		{"max 2", 2, time.Second, nil, []int{0}, 1, time.Second},
		{"max 1", 1, time.Second, nil, nil, 0, time.Second},
	} {
		for cs, setup := range setups {
			t.Run(fmt.Sprintf("%s/case %d", tc.name, cs), func(t *testing.T) {
				e := bt.New(t)
				setup(e)
				p := e.Processor(func(c *bit.Config) {
					c.RecheckDelay = tc.delay
					if cs == 4 {
						c.UnreadableStores = []string{bt.Account + "/1"}
					}
				})
				for _, n := range tc.retryAt {
					err := p.Handle(attempt(n, tc.max), bt.BitTask(n))
					if _, ok := processors.RetryDelay(err); ok || err == nil || processors.IsPermanent(err) {
						t.Fatalf("case %d attempts %d: err %v, want a plain retry (no wait)", cs, n, err)
					}
					if e.Row() != nil || len(e.BitErrors())+len(e.Audits()) != 0 {
						t.Fatalf("case %d attempts %d: acted before the last attempt", cs, n)
					}
				}
				for _, n := range tc.waitAt {
					err := p.Handle(attempt(n, tc.max), bt.BitTask(n))
					d, ok := processors.RetryDelay(err)
					if !ok || d != tc.wantCfgD || processors.IsPermanent(err) {
						t.Fatalf("case %d attempts %d: err %v, want RetryAfter(%s)", cs, n, err, tc.wantCfgD)
					}
					if e.Row() != nil || len(e.BitErrors())+len(e.Audits()) != 0 {
						t.Fatalf("case %d attempts %d: acted before the last attempt", cs, n)
					}
				}
				if err := p.Handle(attempt(tc.finalAt, tc.max), bt.BitTask(tc.finalAt)); err != nil {
					t.Fatalf("case %d attempts %d (last): %v", cs, tc.finalAt, err)
				}
				if r := e.Row(); r == nil || r.Case != cs || r.Result != bitlog.ResultError {
					t.Fatalf("case %d last attempt row %+v", cs, r)
				}
			})
		}
	}
}

// attempt is the context Workman gives attempt n of a task under limit max
// (0: no limit on the context, as outside Workman: the default applies).
func attempt(n, max int) context.Context {
	if max == 0 {
		return context.Background()
	}
	return processors.WithAttempts(context.Background(), processors.Attempts{Done: n, Limit: max})
}

func TestCase5RepairsIndexAndPatchesAudit(t *testing.T) {
	ctx := context.Background()
	e := bt.New(t)
	e.Put("1", bt.Good)
	e.SetIndex(bt.OldMD5)
	e.SetAudit(task.ActionAddContent, bt.GoodMD5, nil) // null properties
	p := e.Processor(nil)
	if err := p.Handle(ctx, bt.BitTask(0)); err != nil {
		t.Fatal(err)
	}
	if r := e.Row(); r.Case != 5 || r.Result != bitlog.ResultFailure {
		t.Fatalf("row %+v", r)
	}
	ie, err := e.Index.Get(ctx, bt.CIItem())
	if err != nil {
		t.Fatal(err)
	}
	if ie.Checksum != bt.GoodMD5 || ie.Properties["creator"] != "bob" || !ie.Modified.Equal(bt.T0) {
		t.Errorf("index row %+v: want checksum fixed in place, properties patched, time kept", ie)
	}
	a, err := e.Audit.Latest(ctx, bt.Account, "1", bt.Space, bt.Item)
	if err != nil {
		t.Fatal(err)
	}
	if a.Checksum != bt.GoodMD5 || a.Properties["creator"] != "bob" || a.MimeType != "text/plain" || !a.Time.Equal(bt.T0) {
		t.Errorf("audit entry %+v: want properties patched from storage", a)
	}
	if n := e.Audit.Len(); n != 1 {
		t.Errorf("audit log holds %d entries, want the patched one only", n)
	}
	// The next check finds everything in order: the copy's verdict is its
	// SUCCESS, while the run's row keeps what the run found.
	e.Clock.Advance(time.Minute)
	if err := p.Handle(ctx, bt.BitTask(0)); err != nil {
		t.Fatal(err)
	}
	if vs, _, err := e.BitLog.Verdicts(ctx, bt.Account, "1", bt.Space, "", 0); err != nil || len(vs) != 1 || vs[0].Result != bitlog.ResultSuccess || !vs[0].CheckedAt.Equal(e.Clock.Now()) {
		t.Fatalf("verdict after the next check %+v %v, want its SUCCESS", vs, err)
	}
	if r := e.Row(); r.Case != 5 || r.Result != bitlog.ResultFailure {
		t.Fatalf("the run's row after the next check %+v, want its FAILURE case 5", r)
	}
}

func TestCase5WritesMissingIndexRow(t *testing.T) {
	ctx := context.Background()
	e := bt.New(t)
	e.Put("1", bt.Good)
	e.SetAudit(task.ActionAddContent, bt.GoodMD5, props)
	if err := e.Processor(nil).Handle(ctx, bt.BitTask(0)); err != nil {
		t.Fatal(err)
	}
	ie, err := e.Index.Get(ctx, bt.CIItem())
	if err != nil {
		t.Fatal(err)
	}
	if ie.Checksum != bt.GoodMD5 || ie.Deleted || ie.MimeType != "text/plain" || !ie.Modified.Equal(bt.T0) {
		t.Errorf("index row %+v", ie)
	}
}

func TestCRC64NVME(t *testing.T) {
	for _, tc := range []struct {
		name  string
		wrong bool
		sour  bool
		want  int
	}{
		{"verified", false, false, 1},
		{"provider CRC wrong", true, false, 3},
		{"content sour", false, true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := bt.New(t)
			healthy(e, false)
			if tc.sour {
				e.Sour("1")
			}
			e.Wrap("1", func(p storage.Provider) storage.Provider { return bt.CRCProvider{Provider: p, Wrong: tc.wrong} })
			if err := e.Processor(nil).Handle(context.Background(), bt.BitTask(0)); err != nil {
				t.Fatal(err)
			}
			r := e.Row()
			if r.Case != tc.want {
				t.Fatalf("case %d, want %d (%s)", r.Case, tc.want, r.Details)
			}
			if tc.want == 1 && r.StorageChecksum != bt.GoodMD5 {
				t.Errorf("S = %q, want the recorded MD5 after CRC verification", r.StorageChecksum)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	e := bt.New(t)
	healthy(e, false)
	p := e.Processor(nil)

	malformed := task.New(task.TypeBit, map[string]string{"account": bt.Account, "storeId": "1"})
	if err := p.Handle(ctx, malformed); !processors.IsPermanent(err) {
		t.Errorf("malformed task: %v, want permanent", err)
	}
	unknown := task.Bit{Account: bt.Account, StoreID: "9", SpaceID: bt.Space, ContentID: bt.Item}.Task()
	if err := p.Handle(ctx, unknown); !processors.IsPermanent(err) {
		t.Errorf("unknown store: %v, want permanent", err)
	}
	e.Wrap("1", func(p storage.Provider) storage.Provider { return bt.Failing{Provider: p} })
	err := p.Handle(ctx, bt.BitTask(0))
	if !errors.Is(err, bt.ErrTransient) || processors.IsPermanent(err) {
		t.Errorf("provider error: %v, want a plain (retried) error", err)
	}
	if _, ok := processors.RetryDelay(err); ok {
		t.Errorf("provider error asks for a recheck delay: %v", err)
	}
	if e.Row() != nil {
		t.Error("a row was recorded for a failed check")
	}
	if _, err := bit.New(bit.Config{}); err == nil {
		t.Error("New with an empty config succeeded")
	}
}

func TestRedeliveryKeepsOneRow(t *testing.T) {
	e := bt.New(t)
	healthy(e, false)
	p := e.Processor(nil)
	for range 2 {
		if err := p.Handle(context.Background(), bt.BitTask(0)); err != nil {
			t.Fatal(err)
		}
	}
	if c, _ := e.BitLog.Count(context.Background(), bt.RunID, bt.Account, "1", bt.Space); c.Total != 1 || c.Success != 1 {
		t.Fatalf("counts %+v, want one SUCCESS", c)
	}
}

// A content ID the store refuses is refused on every retry: permanent at
// once, no row recorded.
func TestInvalidContentIDIsPermanent(t *testing.T) {
	e := bt.New(t)
	healthy(e, false)
	p := e.Processor(nil)
	for _, id := range []string{"../x", "a//b"} {
		err := p.Handle(context.Background(), task.Bit{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: id, RunID: bt.RunID}.Task())
		if !processors.IsPermanent(err) || !errors.Is(err, storage.ErrInvalidID) {
			t.Errorf("content ID %q: %v, want permanent ErrInvalidID", id, err)
		}
	}
	if e.Row() != nil {
		t.Error("a row was recorded for a refused ID")
	}
}

// TestCase11RowOnlyInARun: a deleted item checked in a producer run keeps
// a row (the run's report counts results against the items the producer
// listed); a check outside any run records nothing, as the decision table says.
func TestCase11RowOnlyInARun(t *testing.T) {
	ctx := context.Background()
	e := bt.New(t)
	p := e.Processor(nil)
	adhoc := task.Bit{Account: bt.Account, StoreID: "1", SpaceID: bt.Space, ContentID: bt.Item, Attempts: 2}.Task()
	if err := p.Handle(ctx, adhoc); err != nil {
		t.Fatal(err)
	}
	if rows, _, err := e.BitLog.Results(ctx, bitlog.Filter{}); err != nil || len(rows) != 0 {
		t.Fatalf("case 11 outside a run recorded %+v (%v), want nothing", rows, err)
	}
	if err := p.Handle(ctx, bt.BitTask(2)); err != nil {
		t.Fatal(err)
	}
	if r := e.Row(); r == nil || r.Case != 11 || r.Result != bitlog.ResultSuccess {
		t.Fatalf("case 11 in a run: row %+v, want SUCCESS case 11", r)
	}
}
