// Package configstoretest is the conformance suite of configstore.Store:
// every implementation runs it (the directory one in process, the S3 one
// against the emulator).
package configstoretest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/millfleet/mill/pkg/configstore"
)

// Harness is the implementation under test, the one entry shape of Mill's
// conformance suites: New makes what one subtest runs on, the other fields
// say where an implementation may differ.
type Harness struct {
	// New returns an empty store whose size limit is maxSize.
	New func(t *testing.T, maxSize int64) configstore.Store
	// RacyConditions, when set, says why the implementation under test
	// cannot make concurrent conditional writes atomic (an emulator that
	// checks and writes in two steps); the race subtest is skipped.
	RacyConditions string
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("configstoretest: Harness.New is nil")
	}
	ctx := context.Background()
	newStore := func(t *testing.T) configstore.Store { return h.New(t, 1<<10) }
	mustPut := func(t *testing.T, s configstore.Store, name, data string, c configstore.Cond, m configstore.Meta) configstore.Version {
		t.Helper()
		v, err := s.Put(ctx, name, []byte(data), c, m)
		if err != nil {
			t.Fatalf("Put(%s): %v", name, err)
		}
		if v.ETag == "" || v.ID == "" || !v.Current {
			t.Fatalf("Put(%s) = %+v, want an id, an ETag, current", name, v)
		}
		return v
	}
	get := func(t *testing.T, s configstore.Store, name string) *configstore.File {
		t.Helper()
		f, err := s.Get(ctx, name)
		if err != nil {
			t.Fatalf("Get(%s): %v", name, err)
		}
		return f
	}

	t.Run("InvalidNames", func(t *testing.T) {
		s := newStore(t)
		for _, n := range []string{"", ".", "..", ".hidden", "a/b", `a\b`, "a\x00b", "../x"} {
			if _, err := s.Get(ctx, n); !errors.Is(err, configstore.ErrInvalidName) {
				t.Errorf("Get(%q) = %v, want ErrInvalidName", n, err)
			}
			if _, err := s.Put(ctx, n, []byte("x"), configstore.Cond{}, configstore.Meta{}); !errors.Is(err, configstore.ErrInvalidName) {
				t.Errorf("Put(%q) = %v, want ErrInvalidName", n, err)
			}
		}
	})

	t.Run("Missing", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.Get(ctx, "none.json"); !errors.Is(err, configstore.ErrNotFound) {
			t.Errorf("Get = %v, want ErrNotFound", err)
		}
		vs, err := s.History(ctx, "none.json", 10)
		if err != nil || len(vs) != 0 {
			t.Errorf("History = %v, %v, want none", vs, err)
		}
		if err := s.Delete(ctx, "none.json", configstore.Cond{}, configstore.Meta{}); err != nil {
			t.Errorf("unconditional Delete of a missing file = %v, want nil", err)
		}
		if _, err := s.Put(ctx, "none.json", []byte("x"), configstore.Cond{IfMatch: `"0123"`}, configstore.Meta{}); !errors.Is(err, configstore.ErrConflict) {
			t.Errorf("Put IfMatch on a missing file = %v, want ErrConflict", err)
		}
		if err := s.Delete(ctx, "none.json", configstore.Cond{IfMatch: `"0123"`}, configstore.Meta{}); !errors.Is(err, configstore.ErrConflict) {
			t.Errorf("Delete IfMatch on a missing file = %v, want ErrConflict", err)
		}
	})

	t.Run("CreateOnce", func(t *testing.T) {
		s := newStore(t)
		v := mustPut(t, s, "a.json", `{"n":1}`, configstore.Cond{IfAbsent: true}, configstore.Meta{Author: "ana", Action: "create"})
		if _, err := s.Put(ctx, "a.json", []byte(`{"n":2}`), configstore.Cond{IfAbsent: true}, configstore.Meta{}); !errors.Is(err, configstore.ErrConflict) {
			t.Fatalf("second create = %v, want ErrConflict", err)
		}
		f := get(t, s, "a.json")
		if string(f.Data) != `{"n":1}` || f.Version.ETag != v.ETag || f.Version.ID != v.ID {
			t.Fatalf("Get = %q %+v, want the first write %+v", f.Data, f.Version, v)
		}
		if f.Version.Meta.Author != "ana" || f.Version.Meta.Action != "create" {
			t.Errorf("Get meta = %+v, want ana/create", f.Version.Meta)
		}
	})

	t.Run("CompareAndSwap", func(t *testing.T) {
		s := newStore(t)
		v1 := mustPut(t, s, "p.json", "one", configstore.Cond{}, configstore.Meta{})
		v2 := mustPut(t, s, "p.json", "two", configstore.Cond{IfMatch: v1.ETag}, configstore.Meta{Author: "bo"})
		if _, err := s.Put(ctx, "p.json", []byte("three"), configstore.Cond{IfMatch: v1.ETag}, configstore.Meta{Author: "chen"}); !errors.Is(err, configstore.ErrConflict) {
			t.Fatalf("Put with a stale ETag = %v, want ErrConflict", err)
		}
		if f := get(t, s, "p.json"); string(f.Data) != "two" || f.Version.ETag != v2.ETag {
			t.Fatalf("after the refused write Get = %q, want two", f.Data)
		}
	})

	t.Run("HistoryAndDelete", func(t *testing.T) {
		s := newStore(t)
		v1 := mustPut(t, s, "h.json", "first", configstore.Cond{IfAbsent: true}, configstore.Meta{Author: "ana", Action: "create"})
		v2 := mustPut(t, s, "h.json", "second", configstore.Cond{IfMatch: v1.ETag}, configstore.Meta{Author: "bo", Action: "save"})
		mustPut(t, s, "h.json.bak", "other file", configstore.Cond{}, configstore.Meta{})
		if err := s.Delete(ctx, "h.json", configstore.Cond{IfMatch: v1.ETag}, configstore.Meta{}); !errors.Is(err, configstore.ErrConflict) {
			t.Fatalf("Delete with a stale ETag = %v, want ErrConflict", err)
		}
		if err := s.Delete(ctx, "h.json", configstore.Cond{IfMatch: v2.ETag}, configstore.Meta{Author: "chen", Action: "delete"}); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, err := s.Get(ctx, "h.json"); !errors.Is(err, configstore.ErrNotFound) {
			t.Fatalf("Get after Delete = %v, want ErrNotFound", err)
		}
		vs, err := s.History(ctx, "h.json", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) != 3 || !vs[0].Deleted || !vs[0].Current || vs[1].ID != v2.ID || vs[2].ID != v1.ID || vs[1].Current || vs[2].Current {
			t.Fatalf("History = %+v, want deletion, v2, v1 (newest first, only the deletion current)", vs)
		}
		if vs[1].Meta.Author != "bo" || vs[1].Meta.Action != "save" || vs[2].Meta.Author != "ana" || vs[1].ETag != v2.ETag || vs[1].Size != int64(len("second")) {
			t.Errorf("History metadata = %+v", vs)
		}
		if vs, err := s.History(ctx, "h.json", 2); err != nil || len(vs) != 2 || vs[1].ID != v2.ID {
			t.Errorf("History limit 2 = %+v, %v", vs, err)
		}
		f, err := s.GetVersion(ctx, "h.json", v1.ID)
		if err != nil || string(f.Data) != "first" || f.Version.Meta.Author != "ana" {
			t.Fatalf("GetVersion(v1) = %+v, %v", f, err)
		}
		if _, err := s.GetVersion(ctx, "h.json", vs[0].ID); !errors.Is(err, configstore.ErrNotFound) {
			t.Errorf("GetVersion(deletion) = %v, want ErrNotFound", err)
		}
		if _, err := s.GetVersion(ctx, "h.json", "no-such-version"); !errors.Is(err, configstore.ErrNotFound) {
			t.Errorf("GetVersion(unknown) = %v, want ErrNotFound", err)
		}
		// A deleted file can be created again.
		mustPut(t, s, "h.json", "again", configstore.Cond{IfAbsent: true}, configstore.Meta{})
		if f := get(t, s, "h.json"); string(f.Data) != "again" {
			t.Errorf("Get after re-create = %q", f.Data)
		}
	})

	t.Run("TooLarge", func(t *testing.T) {
		s := h.New(t, 16)
		if _, err := s.Put(ctx, "big.json", make([]byte, 17), configstore.Cond{}, configstore.Meta{}); !errors.Is(err, configstore.ErrTooLarge) {
			t.Errorf("Put over the limit = %v, want ErrTooLarge", err)
		}
		mustPut(t, s, "ok.json", "0123456789abcdef", configstore.Cond{}, configstore.Meta{})
	})

	t.Run("NonASCIIAuthor", func(t *testing.T) {
		s := newStore(t)
		mustPut(t, s, "u.json", "x", configstore.Cond{}, configstore.Meta{Author: "zoë@example.org", Action: "restore of 3 / 4"})
		if f := get(t, s, "u.json"); f.Version.Meta.Author != "zoë@example.org" || f.Version.Meta.Action != "restore of 3 / 4" {
			t.Errorf("meta = %+v", f.Version.Meta)
		}
	})

	t.Run("ConcurrentWritersOneWins", func(t *testing.T) {
		if h.RacyConditions != "" {
			t.Skip(h.RacyConditions)
		}
		s := newStore(t)
		v := mustPut(t, s, "race.json", "base", configstore.Cond{}, configstore.Meta{})
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, errs[i] = s.Put(ctx, "race.json", fmt.Appendf(nil, "writer %d", i), configstore.Cond{IfMatch: v.ETag}, configstore.Meta{})
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, configstore.ErrConflict):
				t.Errorf("Put: %v", err)
			}
		}
		if won != 1 {
			t.Errorf("%d of %d writers against one version succeeded, want 1", won, n)
		}
	})
}
