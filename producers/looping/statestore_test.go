package looping_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testenv"
	"github.com/millfleet/mill/producers/looping"
)

func sampleState() *looping.State {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &looping.State{
		Version:         looping.StateVersion,
		Kind:            "dupproducer",
		RunID:           "20260101T000000Z",
		CurrentRunStart: start,
		NextRunStart:    start.Add(24 * time.Hour),
		Morsels: []looping.Morsel{
			{ID: "acme/spaceA/1>2", Marker: "photos/0999.jpg", DeletesDone: true, Queued: 1003, Data: json.RawMessage(`{"account":"acme","space":"spaceA","src":"1","dst":"2"}`)},
			{ID: "acme/spaceB/1>3", DeletesDone: false, Data: json.RawMessage(`{"account":"acme","space":"spaceB","src":"1","dst":"3"}`)},
		},
		Cursor:      1,
		Queued:      looping.Counts{"DUP": {"acme": 1003}},
		Bites:       2,
		Invocations: 1,
		SavedAt:     start.Add(time.Minute),
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

func TestFileStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "dup.json")
	storeContract(t, looping.NewFileStore(path))
	// No temporary files are left behind.
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 || ents[0].Name() != "dup.json" {
		t.Fatalf("directory holds %v", ents)
	}
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
	storeContract(t, looping.NewMemoryStore())
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
	storeContract(t, s)
}

func TestOpenStateStore(t *testing.T) {
	for _, bad := range []string{"", "s3://", "s3://bucket", "s3://bucket/", "s3:///key", "s3://bucket/dir/"} {
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
		"wrong version":   `{"version":2,"kind":"k","morsels":[]}`,
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
