package looping_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/producers/looping"
)

func sampleState() *looping.State {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &looping.State{
		Version: looping.StateVersion,
		Kind:    "dupproducer",
		RunFields: looping.RunFields{
			RunID:           "20260101T000000Z",
			CurrentRunStart: start,
			NextRunStart:    start.Add(24 * time.Hour),
			Cursor:          1,
			Bites:           2,
			Invocations:     1,
			SavedAt:         start.Add(time.Minute),
		},
		Morsels: []looping.Morsel{
			{ID: "acme/spaceA/1>2", Marker: "photos/0999.jpg", DeletesDone: true, Queued: 1003, Data: json.RawMessage(`{"account":"acme","space":"spaceA","src":"1","dst":"2"}`)},
			{ID: "acme/spaceB/1>3", DeletesDone: false, Data: json.RawMessage(`{"account":"acme","space":"spaceB","src":"1","dst":"3"}`)},
		},
		Queued: looping.Counts{"DUP": {"acme": 1003}},
	}
}

// storeContract checks what every StateStore promises.
func storeContract(t *testing.T, s looping.StateStore) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Load(ctx); !errors.Is(err, looping.ErrNoState) {
		t.Fatalf("Load before Save: %v, want ErrNoState", err)
	}
	want := sampleState()
	if err := s.Save(ctx, want); err != nil {
		t.Fatalf("Save: %v", err)
	}
	got, err := s.Load(ctx)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	wb, _ := want.Encode()
	gb, _ := got.Encode()
	if !bytes.Equal(wb, gb) {
		t.Fatalf("round trip\n got %s\nwant %s", gb, wb)
	}
	want.Morsels[1].Marker = "x"
	want.Cursor = 0
	if err := s.Save(ctx, want); err != nil {
		t.Fatalf("second Save: %v", err)
	}
	if got, err := s.Load(ctx); err != nil || got.Morsels[1].Marker != "x" || got.Cursor != 0 {
		t.Fatalf("after second Save: %+v %v", got, err)
	}
}

// bigState is a run of n morsels, each with producer data.
func bigState(n int) *looping.State {
	st := sampleState()
	st.Morsels = nil
	for i := range n {
		st.Morsels = append(st.Morsels, looping.Morsel{ID: fmt.Sprintf("acme/space%05d/1>2", i),
			Data: json.RawMessage(fmt.Sprintf(`{"account":"acme","space":"space%05d","src":"1","dest":"2"}`, i))})
	}
	st.Cursor = 0
	return st
}

func sameState(t *testing.T, what string, got, want *looping.State) {
	t.Helper()
	gb, err := got.Encode()
	if err != nil {
		t.Fatal(err)
	}
	wb, _ := want.Encode()
	if !bytes.Equal(gb, wb) {
		t.Fatalf("%s: state differs\n got %.2000s\nwant %.2000s", what, gb, wb)
	}
}

// journalContract checks the layout every StateStore keeps: a save writes
// what changed (a journal entry far smaller than the state), another
// process loads exactly what was saved, the journal is compacted (old
// entries deleted) at its limit, at a new run and after a failed write, and
// a bad entry is an ErrState.
func journalContract(t *testing.T, s looping.StateStore) {
	t.Helper()
	ctx := context.Background()
	defer looping.SetMaxEntries(8)()
	st := bigState(200)
	if err := s.Save(ctx, st); err != nil {
		t.Fatal(err)
	}
	baseBytes, _ := looping.Written(s)
	bite := func(i int) {
		t.Helper()
		m := &st.Morsels[i%len(st.Morsels)]
		m.Marker = fmt.Sprintf("item-%05d", i)
		m.Queued += 10
		st.Queued.Add("DUP", "acme", 10)
		st.Bites++
		st.Cursor = (i + 1) % len(st.Morsels)
		st.SavedAt = st.SavedAt.Add(time.Second)
		if err := s.Save(ctx, st); err != nil {
			t.Fatalf("save after bite %d: %v", i, err)
		}
	}
	for i := range 5 {
		bite(i)
	}
	b, n := looping.Written(s)
	if n != 6 || (b-baseBytes)*20 > 5*baseBytes {
		t.Errorf("5 one-morsel saves wrote %d bytes in %d blobs (the whole state is %d bytes): want 5 blobs far smaller than the state", b-baseBytes, n-1, baseBytes)
	}
	if ents, err := looping.JournalEntries(ctx, s); err != nil || len(ents) != 5 {
		t.Errorf("journal %v %v, want 5 entries", ents, err)
	}
	got, err := looping.Reopen(s).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "another process's load", got, st)

	// Past the limit, the journal is compacted and the old entries go.
	for i := 5; i < 20; i++ {
		bite(i)
	}
	ents, err := looping.JournalEntries(ctx, s)
	if err != nil || len(ents) > 8 {
		t.Errorf("journal after 20 saves with a limit of 8: %v %v", ents, err)
	}
	got, err = looping.Reopen(s).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "after compaction", got, st)

	// A write whose outcome is unknown: the next save compacts, and the
	// load sees the latest save.
	looping.FailPuts(s, 1)
	st.Morsels[3].Done = true
	if err := s.Save(ctx, st); err == nil {
		t.Fatal("injected write failure not reported")
	}
	bite(21)
	got, err = looping.Reopen(s).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "after a failed write", got, st)

	// A new run (other morsels) is a new base, without the old entries.
	bite(22)
	st = bigState(3)
	if err := s.Save(ctx, st); err != nil {
		t.Fatal(err)
	}
	if ents, err := looping.JournalEntries(ctx, s); err != nil || len(ents) != 0 {
		t.Errorf("journal after a new run's save: %v %v, want none", ents, err)
	}
	got, err = looping.Reopen(s).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "new run", got, st)
}

// migrationContract: a version 1 state (the whole state in one object,
// before the journal) loads, and the first save moves it to the journal.
func migrationContract(t *testing.T, s looping.StateStore) {
	t.Helper()
	ctx := context.Background()
	old := sampleState()
	old.Version = 1
	b, err := old.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := looping.WriteBase(ctx, s, b); err != nil {
		t.Fatal(err)
	}
	st, err := s.Load(ctx)
	if err != nil {
		t.Fatalf("load a version 1 state: %v", err)
	}
	sameState(t, "version 1", st, old)
	st.Morsels[1].Marker = "resumed"
	st.Bites++
	if err := s.Save(ctx, st); err != nil {
		t.Fatal(err)
	}
	st.Morsels[0].Done = true
	if err := s.Save(ctx, st); err != nil {
		t.Fatal(err)
	}
	got, err := looping.Reopen(s).Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != looping.StateVersion || got.Morsels[1].Marker != "resumed" || !got.Morsels[0].Done || got.Bites != old.Bites+1 {
		t.Fatalf("after migrating: %+v", got)
	}
}

// badEntryContract: entries that do not fit the base are an ErrState,
// never applied.
func badEntryContract(t *testing.T, s looping.StateStore) {
	t.Helper()
	ctx := context.Background()
	if err := s.Save(ctx, sampleState()); err != nil { // generation 1
		t.Fatal(err)
	}
	for name, e := range map[string]string{
		"not json":       `{"version":2,`,
		"foreign morsel": `{"version":2,"generation":1,"seq":1,"header":{"run_id":"x","cursor":0,"bites":1,"invocations":1},"morsels":[{"i":0,"id":"other/space/1>2"}]}`,
		"index outside":  `{"version":2,"generation":1,"seq":1,"header":{"run_id":"x","cursor":0,"bites":1,"invocations":1},"morsels":[{"i":7,"id":"acme/spaceA/1>2"}]}`,
		"wrong seq":      `{"version":2,"generation":1,"seq":4,"header":{"cursor":0,"bites":1,"invocations":1}}`,
		"negative count": `{"version":2,"generation":1,"seq":1,"header":{"run_id":"x","cursor":0,"bites":1,"invocations":1},"queued":{"DUP":{"acme":-5}}}`,
		"cursor outside": `{"version":2,"generation":1,"seq":1,"header":{"run_id":"x","cursor":9,"bites":1,"invocations":1}}`,
	} {
		if err := looping.WriteEntry(ctx, s, 1, 1, []byte(e)); err != nil {
			t.Fatal(err)
		}
		if st, err := looping.Reopen(s).Load(ctx); !errors.Is(err, looping.ErrState) {
			t.Errorf("%s: %+v %v, want ErrState", name, st, err)
		}
	}
}

// stateHarness is a StateStore implementation under test, in the entry
// shape of Mill's conformance suites (xxxtest.Harness): New returns a fresh,
// empty store for the contract called name.
type stateHarness struct {
	New func(t *testing.T, name string) looping.StateStore
}

// runStateContracts holds a StateStore implementation to every contract,
// each on a fresh store.
func runStateContracts(t *testing.T, h stateHarness) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, looping.StateStore)
	}{{"store", storeContract}, {"journal", journalContract}, {"migration", migrationContract}, {"badEntry", badEntryContract}} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h.New(t, c.name)) })
	}
}

func TestFileStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "store", "dup.json")
	runStateContracts(t, stateHarness{New: func(t *testing.T, name string) looping.StateStore {
		return looping.NewFileStore(filepath.Join(dir, name, "dup.json"))
	}})
	// No temporary files are left behind.
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".put-") {
			t.Errorf("temporary file %s left", p)
		}
		return err
	})
	// A corrupt file is an ErrState, not "no state" (which would restart
	// the run from scratch).
	if err := os.WriteFile(path, []byte(`{"version":1,`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := looping.NewFileStore(path).Load(context.Background()); !errors.Is(err, looping.ErrState) {
		t.Fatalf("corrupt file: %v, want ErrState", err)
	}
}

func TestMemoryStore(t *testing.T) {
	runStateContracts(t, stateHarness{New: func(*testing.T, string) looping.StateStore { return looping.NewMemoryStore() }})
}

func TestS3Store(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.S3()
	bucket := testenv.Prefix(t) + "state"
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	testenv.CleanupBucket(t, c, bucket)
	s, err := looping.OpenStateStore("s3://"+bucket+"/producers/dup.json", c)
	if err != nil {
		t.Fatal(err)
	}
	if s.String() != "s3://"+bucket+"/producers/dup.json" {
		t.Fatalf("String() = %q", s)
	}
	runStateContracts(t, stateHarness{New: func(t *testing.T, name string) looping.StateStore {
		if name == "store" {
			return s
		}
		return looping.NewS3Store(c, bucket, name+"/dupproducer.json")
	}})
}

func TestOpenStateStore(t *testing.T) {
	for _, bad := range []string{"", "s3://", "s3://bucket", "s3://bucket/", "s3:///key", "s3://bucket/dir/",
		"s3://bucket/../key", "s3://bucket/a//b", "s3://bucket/sp ace.json", "/var/lib/mill/dup state.json", "/var/lib/mill/"} {
		if _, err := looping.OpenStateStore(bad, &s3.Client{}); err == nil {
			t.Errorf("OpenStateStore(%q): no error", bad)
		}
	}
	if _, err := looping.OpenStateStore("s3://b/k", nil); err == nil {
		t.Error("s3 location without a client accepted")
	}
	s, err := looping.OpenStateStore("/var/lib/mill/dup.json", nil)
	if err != nil || s.String() != "/var/lib/mill/dup.json" {
		t.Fatalf("file location: %v %v", s, err)
	}
}

func TestDecodeStateErrors(t *testing.T) {
	for name, in := range map[string]string{
		"not json":        `nope`,
		"wrong version":   `{"version":3,"kind":"k","morsels":[]}`,
		"no kind":         `{"version":1,"morsels":[]}`,
		"run without id":  `{"version":1,"kind":"k","current_run_start":"2026-01-01T00:00:00Z","morsels":[]}`,
		"empty morsel id": `{"version":1,"kind":"k","morsels":[{"id":""}]}`,
		"repeated id":     `{"version":1,"kind":"k","morsels":[{"id":"a"},{"id":"a"}]}`,
		"cursor outside":  `{"version":1,"kind":"k","cursor":2,"morsels":[{"id":"a"}]}`,
		"negative count":  `{"version":1,"kind":"k","morsels":[{"id":"a","queued":-1}]}`,
	} {
		if _, err := looping.DecodeState([]byte(in)); !errors.Is(err, looping.ErrState) {
			t.Errorf("%s: %v, want ErrState", name, err)
		}
	}
}

func FuzzDecodeState(f *testing.F) {
	b, _ := sampleState().Encode()
	f.Add(b)
	f.Add([]byte(`{"version":1,"kind":"k","morsels":[]}`))
	f.Add([]byte(`{"version":1,"kind":"k","cursor":-1,"morsels":[{"id":"a","data":{"x":[1,2]}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := looping.DecodeState(b)
		if err != nil {
			if !errors.Is(err, looping.ErrState) {
				t.Fatalf("error %v does not wrap ErrState", err)
			}
			return
		}
		// What decodes re-encodes to something that decodes the same.
		e1, err := s.Encode()
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		s2, err := looping.DecodeState(e1)
		if err != nil {
			t.Fatalf("re-decode: %v\n%s", err, e1)
		}
		e2, _ := s2.Encode()
		if !bytes.Equal(e1, e2) {
			t.Fatalf("unstable encoding\n%s\n%s", e1, e2)
		}
	})
}
