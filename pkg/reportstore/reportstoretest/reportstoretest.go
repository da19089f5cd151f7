// Package reportstoretest is the conformance suite of reportstore.Store:
// every implementation runs Run against a fresh, empty store.
package reportstoretest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/millfleet/mill/pkg/reportstore"
)

// Harness is how the suite makes what one subtest runs on.
type Harness struct {
	// New returns a fresh, empty store (required).
	New func(t *testing.T) Fixture
}

// Fixture is one fresh store under test.
type Fixture struct {
	Store reportstore.Store
	// Foreign lists locations outside this store (another bucket or
	// prefix, a path outside the directory); Open must refuse each.
	Foreign []string
}

// Run runs the suite; h.New returns an empty store for each subtest.
func Run(t *testing.T, h Harness) {
	if h.New == nil {
		t.Fatal("reportstoretest: Harness.New is required")
	}
	newStore := h.New
	t.Run("PutThenOpen", func(t *testing.T) {
		h := newStore(t)
		want := []byte("account\tstore\tspace\ncontent\tü\n")
		loc := put(t, h.Store, "bit-integrity/acme/1/photos/20260101T000000Z.tsv", want)
		if got := open(t, h.Store, loc); !bytes.Equal(got, want) {
			t.Errorf("Open(%q) = %q, want %q", loc, got, want)
		}
	})
	t.Run("PutReplaces", func(t *testing.T) {
		h := newStore(t)
		first := put(t, h.Store, "r/a.tsv", []byte("old, longer content\n"))
		second := put(t, h.Store, "r/a.tsv", []byte("new\n"))
		if first != second {
			t.Errorf("locations %q and %q for one key", first, second)
		}
		if got := open(t, h.Store, second); string(got) != "new\n" {
			t.Errorf("after replace: %q", got)
		}
	})
	t.Run("OpenRefusesForeign", func(t *testing.T) {
		h := newStore(t)
		loc := put(t, h.Store, "r/a.tsv", []byte("x\n"))
		for _, bad := range append([]string{"", "relative/r/a.tsv", "/etc/passwd", "s3://another-bucket/r/a.tsv", loc + "/../../../etc/passwd"}, h.Foreign...) {
			body, _, err := h.Store.Open(context.Background(), bad)
			if body != nil {
				body.Close()
			}
			if !errors.Is(err, reportstore.ErrForeign) {
				t.Errorf("Open(%q): %v, want ErrForeign", bad, err)
			}
		}
	})
}

func put(t *testing.T, s reportstore.Store, key string, data []byte) string {
	t.Helper()
	loc, err := s.Put(context.Background(), key, bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return loc
}

func open(t *testing.T, s reportstore.Store, loc string) []byte {
	t.Helper()
	body, size, err := s.Open(context.Background(), loc)
	if err != nil {
		t.Fatalf("Open(%q): %v", loc, err)
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != size {
		t.Errorf("Open(%q): size %d, read %d bytes", loc, size, len(b))
	}
	return b
}
