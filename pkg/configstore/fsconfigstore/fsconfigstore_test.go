package fsconfigstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/millfleet/mill/pkg/configstore"
	"github.com/millfleet/mill/pkg/configstore/configstoretest"
	"github.com/millfleet/mill/pkg/configstore/fsconfigstore"
)

func TestDir(t *testing.T) {
	configstoretest.Run(t, configstoretest.Harness{New: func(t *testing.T, maxSize int64) configstore.Store {
		d, err := fsconfigstore.New(t.TempDir(), maxSize)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}})
}

// A file written or removed by another tool (policy.NewDir, an editor)
// becomes a version without an author, so a conditional write can never
// overwrite what it did not see.
func TestDirNoticesOutsideWrites(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := fsconfigstore.New(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	v1, err := d.Put(ctx, "p.json", []byte("mine"), configstore.Cond{}, configstore.Meta{Author: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.json"), []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Put(ctx, "p.json", []byte("mine again"), configstore.Cond{IfMatch: v1.ETag}, configstore.Meta{}); err == nil {
		t.Fatal("a write based on the version before an outside change succeeded")
	}
	f, err := d.Get(ctx, "p.json")
	if err != nil || string(f.Data) != "theirs" || f.Version.Meta.Author != "" {
		t.Fatalf("Get = %+v, %v; want the outside write, no author", f, err)
	}
	if err := os.Remove(filepath.Join(dir, "p.json")); err != nil {
		t.Fatal(err)
	}
	vs, err := d.History(ctx, "p.json", 0)
	if err != nil || len(vs) != 3 || !vs[0].Deleted || string(mustVersion(t, d, vs[1].ID)) != "theirs" {
		t.Fatalf("History = %+v, %v; want removal, outside write, first write", vs, err)
	}
}

func mustVersion(t *testing.T, d configstore.Store, id string) []byte {
	t.Helper()
	f, err := d.GetVersion(context.Background(), "p.json", id)
	if err != nil {
		t.Fatal(err)
	}
	return f.Data
}
