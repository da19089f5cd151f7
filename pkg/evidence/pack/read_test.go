package pack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

// tarGz makes a tar.gz of the given headers, each file's body its name.
func tarGz(t *testing.T, hs ...tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for _, h := range hs {
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(h.Name))
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(h.Name))
		}
	}
	tw.Close()
	zw.Close()
	return b.Bytes()
}

// A bundle from elsewhere unpacks to its one directory's files or not at
// all.
func TestReadBundleRefusesWhatWriteTarGzNeverWrites(t *testing.T) {
	dir := tar.Header{Typeflag: tar.TypeDir, Name: "mill-evidence-2026-Q3/", Mode: 0o755}
	file := func(name string) tar.Header { return tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644} }
	d, files, err := ReadBundle(bytes.NewReader(tarGz(t, dir, file("mill-evidence-2026-Q3/README.md"))))
	if err != nil || d != "mill-evidence-2026-Q3" || string(files["README.md"]) != "mill-evidence-2026-Q3/README.md" {
		t.Fatalf("a good bundle: %q %v %v", d, files, err)
	}
	for _, tc := range []struct {
		name string
		hs   []tar.Header
		want string
	}{
		{"empty", nil, "empty bundle"},
		{"no directory", []tar.Header{file("README.md")}, "not in the bundle's directory"},
		{"dot-dot", []tar.Header{dir, file("mill-evidence-2026-Q3/../../etc/passwd")}, "leaves the bundle"},
		{"absolute", []tar.Header{dir, file("/etc/passwd")}, "leaves the bundle"},
		{"nested", []tar.Header{dir, file("mill-evidence-2026-Q3/a/b")}, "not in the bundle's directory"},
		{"second directory", []tar.Header{dir, {Typeflag: tar.TypeDir, Name: "other/"}}, "a bundle has one"},
		{"symlink", []tar.Header{dir, {Typeflag: tar.TypeSymlink, Name: "mill-evidence-2026-Q3/x", Linkname: "/etc/passwd"}}, "not a file"},
		{"twice", []tar.Header{dir, file("mill-evidence-2026-Q3/a"), file("mill-evidence-2026-Q3/a")}, "twice"},
	} {
		if _, _, err := ReadBundle(bytes.NewReader(tarGz(t, tc.hs...))); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, _, err := ReadBundle(strings.NewReader("not gzip")); err == nil {
		t.Error("accepted a file that is not gzip")
	}
}
