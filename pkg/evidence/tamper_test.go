package evidence

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/blob/dirblob"
	"golang.org/x/mod/sumdb/note"
)

// tamperLog builds a log of 901 events in four batches (checkpoints at
// 256, 600, 601 and 901) and returns its directory.
func tamperLog(t *testing.T) (*dirblob.Store, note.Verifier) {
	t.Helper()
	ctx := context.Background()
	skey, v := testKey(t)
	d := dirblob.New(t.TempDir(), nil)
	l, err := Open(ctx, d, skey, Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, size := range []int{256, 344, 1, 300} {
		if _, err := l.Append(ctx, fixityEvents(n, size)); err != nil {
			t.Fatal(err)
		}
		n += size
	}
	mustVerify(t, d, v)
	return d, v
}

func readFile(t *testing.T, d *dirblob.Store, key string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.Root(), key))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, d *dirblob.Store, key string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(d.Root(), key), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestVerifyNamesTampering: each tampering of the stored log is detected,
// and the problem names the blob (or leaf) tampered with.
func TestVerifyNamesTampering(t *testing.T) {
	for _, c := range []struct {
		name   string
		tamper func(t *testing.T, d *dirblob.Store)
		where  string // a problem's Where
		what   string // in its What
	}{
		{"hash tile rewritten", func(t *testing.T, d *dirblob.Store) {
			b := readFile(t, d, "tile/8/0/001")
			b[40] ^= 1
			writeFile(t, d, "tile/8/0/001", b)
		}, "tile/8/0/001", "rewritten"},
		{"upper hash tile rewritten", func(t *testing.T, d *dirblob.Store) {
			b := readFile(t, d, "tile/8/1/000.p/3")
			b[0] ^= 1
			writeFile(t, d, "tile/8/1/000.p/3", b)
		}, "tile/8/1/000.p/3", "rewritten"},
		{"event bytes changed", func(t *testing.T, d *dirblob.Store) {
			// A canonical event still: the outcome of leaf 300 flipped.
			b := readFile(t, d, "tile/8/data/001")
			lines := bytes.Split(b, []byte("\n"))
			lines[300-256] = bytes.Replace(lines[300-256], []byte(`"outcome":"success"`), []byte(`"outcome":"failure"`), 1)
			writeFile(t, d, "tile/8/data/001", bytes.Join(lines, []byte("\n")))
		}, historyKey(600), "root hash is not the leaves'"},
		{"event made non-canonical", func(t *testing.T, d *dirblob.Store) {
			b := readFile(t, d, "tile/8/data/000")
			writeFile(t, d, "tile/8/data/000", bytes.Replace(b, []byte(`{"v":1,`), []byte(`{"v":1, `), 1))
		}, "leaf 0", "canonical"},
		{"leaf deleted", func(t *testing.T, d *dirblob.Store) {
			b := readFile(t, d, "tile/8/data/002")
			lines := bytes.SplitAfter(b, []byte("\n"))
			writeFile(t, d, "tile/8/data/002", bytes.Join(append(lines[:10:10], lines[11:]...), nil))
		}, "tile/8/data/002", "holds 255 leaves, want 256"},
		{"checkpoint replaced by an older one", func(t *testing.T, d *dirblob.Store) {
			writeFile(t, d, latestKey, readFile(t, d, historyKey(600)))
		}, latestKey, "older than the newest signed checkpoint"},
		{"checkpoint with a bad signature", func(t *testing.T, d *dirblob.Store) {
			b := readFile(t, d, historyKey(601))
			i := bytes.LastIndex(b, []byte(" ")) + 5
			b[i] ^= 1
			writeFile(t, d, historyKey(601), b)
		}, historyKey(601), "signature"},
		{"checkpoint signed by another key", func(t *testing.T, d *dirblob.Store) {
			other, _ := testKey(t)
			s, _ := NewSigner(other)
			cp, _ := signCheckpoint(s, 901, [32]byte{})
			writeFile(t, d, historyKey(901), cp.Signed)
		}, historyKey(901), "signature"},
		{"history rewritten: a consistent checkpoint of another tree", func(t *testing.T, d *dirblob.Store) {
			// The signing key's holder rewrote leaf 0 and re-signed from
			// there on; the old checkpoint of 256 stays.
			b := readFile(t, d, "tile/8/data/000")
			writeFile(t, d, "tile/8/data/000", bytes.Replace(b, []byte(`"outcome":"success"`), []byte(`"outcome":"warning"`), 1))
		}, historyKey(256), "root hash is not the leaves'"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, v := tamperLog(t)
			c.tamper(t, d)
			r, err := Verify(context.Background(), d, v, VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.OK() {
				t.Fatal("verify passed a tampered log")
			}
			var all []string
			found := false
			for _, p := range r.Problems {
				all = append(all, p.String())
				if p.Where == c.where && strings.Contains(p.What, c.what) {
					found = true
				}
			}
			if !found {
				t.Fatalf("no problem at %s saying %q; got:\n%s", c.where, c.what, strings.Join(all, "\n"))
			}
		})
	}
}

// TestVerifyTrustedCheckpoint: a log rolled back as a whole (every blob
// of its newest batch removed) verifies on its own, and fails against the
// checkpoint the verifier trusted before.
func TestVerifyTrustedCheckpoint(t *testing.T) {
	d, v := tamperLog(t)
	trusted := readFile(t, d, latestKey)
	if err := os.Remove(filepath.Join(d.Root(), historyKey(901))); err != nil {
		t.Fatal(err)
	}
	writeFile(t, d, latestKey, readFile(t, d, historyKey(601)))
	mustVerify(t, d, v)
	r, err := Verify(context.Background(), d, v, VerifyOptions{Trusted: trusted})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || r.Problems[0].Where != "trusted checkpoint" || !strings.Contains(r.Problems[0].What, "rolled back") {
		t.Fatalf("problems: %v", r.Problems)
	}
	ok, err := Verify(context.Background(), d, v, VerifyOptions{Trusted: readFile(t, d, historyKey(600))})
	if err != nil || !ok.OK() {
		t.Fatalf("an older trusted checkpoint: %v %v", err, ok.Problems)
	}
}
