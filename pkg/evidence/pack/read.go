package pack

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// MaxBundle bounds what ReadBundle unpacks: a pack holds summaries, not
// events.
const MaxBundle = 256 << 20

// ReadBundle reads a bundle WriteTarGz wrote: its directory and its files
// by name. Anything else — a second directory, a nested path, a link, a
// name with "..", a file twice, more than MaxBundle bytes — is an error,
// so a bundle received from elsewhere unpacks to nothing but its files.
func ReadBundle(r io.Reader) (dir string, files map[string][]byte, err error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return "", nil, fmt.Errorf("pack: %w", err)
	}
	tr := tar.NewReader(io.LimitReader(zr, MaxBundle+1))
	files = map[string][]byte{}
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if dir == "" {
				return "", nil, errors.New("pack: an empty bundle")
			}
			return dir, files, nil
		}
		if err != nil {
			return "", nil, fmt.Errorf("pack: %w", err)
		}
		name := h.Name
		if strings.Contains(name, "..") || path.IsAbs(name) {
			return "", nil, fmt.Errorf("pack: entry %q leaves the bundle", name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if dir != "" || strings.Count(strings.TrimSuffix(name, "/"), "/") != 0 {
				return "", nil, fmt.Errorf("pack: directory %q: a bundle has one", name)
			}
			dir = strings.TrimSuffix(name, "/")
			continue
		case tar.TypeReg:
		default:
			return "", nil, fmt.Errorf("pack: entry %q is not a file", name)
		}
		base, ok := strings.CutPrefix(name, dir+"/")
		if dir == "" || !ok || base == "" || strings.Contains(base, "/") {
			return "", nil, fmt.Errorf("pack: file %q is not in the bundle's directory", name)
		}
		if _, dup := files[base]; dup {
			return "", nil, fmt.Errorf("pack: file %q twice", base)
		}
		if total += h.Size; h.Size < 0 || total > MaxBundle {
			return "", nil, fmt.Errorf("pack: more than %d bytes", MaxBundle)
		}
		if files[base], err = io.ReadAll(tr); err != nil {
			return "", nil, fmt.Errorf("pack: %s: %w", base, err)
		}
	}
}
