package gcsstore

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// listNames lists the names under prefix from start on (inclusive), in
// byte-wise order as GCS lists them (objstore.Provider.ListNames).
func (s *Store) listNames(ctx context.Context, prefix, start string, pageSize int, each func(string) bool) error {
	q := listing{prefix: prefix, startOffset: start, pageSize: int64(min(pageSize, 1000)), fields: []string{"name"}}
	return s.bucket.list(ctx, q, func(a *attrs) (bool, error) { return each(a.Name), nil })
}

// GetRange implements storage.RangeReader. The revision is the object's
// generation: the read asks for that generation, and when it is no longer
// the live one the read fails with storage.ErrChanged.
func (s *Store) GetRange(ctx context.Context, space, id string, off, n int64, revision string) (io.ReadCloser, *storage.Info, error) {
	key, err := s.layout.ContentKey(space, id)
	if err != nil {
		return nil, nil, wrap("get", space+"/"+id, err)
	}
	var gen int64
	if revision != "" {
		gen, err = strconv.ParseInt(revision, 10, 64)
		if err != nil || gen <= 0 {
			return nil, nil, wrap("get", space+"/"+id, fmt.Errorf("%w: revision %q is not a GCS generation", storage.ErrChanged, revision))
		}
	}
	// A read's response lacks the custom metadata: read the attributes
	// first, then the bytes of that generation.
	a, err := s.bucket.attrs(ctx, key, gen)
	if err != nil {
		return nil, nil, wrap("get", space+"/"+id, s.readErr(ctx, space, key, gen, err))
	}
	off, n = objstore.ClampRange(off, n, a.Size)
	info := infoOf(a, id)
	if n == 0 {
		return io.NopCloser(eofReader{}), info, nil
	}
	length := n
	var want *uint32
	if off == 0 && n == a.Size {
		// A whole read asks for no range and is checked against GCS's
		// CRC32C of the object as its bytes arrive (a ranged read is not).
		length = -1
		if a.HasCRC32C {
			want = &a.CRC32C
		}
	}
	r, err := s.bucket.read(ctx, key, a.Generation, off, length, want)
	if err != nil {
		return nil, nil, wrap("get", space+"/"+id, s.readErr(ctx, space, key, a.Generation, err))
	}
	return r, info, nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// readErr tells why a read found no object: the space is missing, the
// generation asked for was replaced (ErrChanged), or the item is missing.
func (s *Store) readErr(ctx context.Context, space, key string, gen int64, err error) error {
	if !s.spaces.NotFound(err) {
		return err
	}
	if serr := s.spaces.Need(ctx, space); serr != nil {
		return serr
	}
	if gen > 0 {
		if a, aerr := s.bucket.attrs(ctx, key, 0); aerr == nil && a.Generation != gen {
			return fmt.Errorf("%w: generation %d, now %d", storage.ErrChanged, gen, a.Generation)
		}
	}
	return err
}
