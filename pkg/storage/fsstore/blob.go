package fsstore

import (
	"context"
	"io/fs"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/ctxio"
)

// A blob replaced behind the store's back. The sidecar's MD5 is the
// store's digest of the bytes it wrote, so it vouches for a blob only
// while the blob is the file the store wrote: the sidecar records the
// blob's size, modification time and file number when it is written, and
// a blob that differs in any of them was replaced (or rewritten) by
// something else. Head then computes the provider checksum from the bytes
// as they are (ProviderChecksum "md5:<hex>" of the blob now, Size its
// size), and Get reports none (its reader hashes the bytes anyway), so a
// kept sidecar is a recorded MD5 the provider contradicts, as an S3
// object's kept "mill-md5" is by its ETag (storage.ChecksumOf). A change
// in place that keeps all three (same size, within the filesystem's
// timestamp granularity) is found only by reading: the bit check does.

// record notes fi, the blob as the sidecar is written.
func (m *meta) record(fi fs.FileInfo) {
	m.BlobModified, m.BlobFile = fi.ModTime().UTC(), fileNumber(fi)
}

// check compares fi, the blob as it is, with what the sidecar recorded.
func (m *meta) check(fi fs.FileInfo) {
	m.blobSize = fi.Size()
	m.replaced = fi.Size() != m.Size ||
		(!m.BlobModified.IsZero() && !fi.ModTime().Equal(m.BlobModified)) ||
		(m.BlobFile != 0 && fileNumber(fi) != 0 && fileNumber(fi) != m.BlobFile)
}

// digest sets info's provider checksum and size from the blob's bytes.
func (s *Store) digest(ctx context.Context, it item, m *meta, info *storage.Info) error {
	f, err := s.open(it.blob(m))
	if err != nil {
		return err
	}
	defer f.Close()
	sum, n, err := storage.MD5Hex(ctxio.NewReader(ctx, f))
	if err != nil {
		return err
	}
	info.ProviderChecksum, info.Size = storage.ProviderMD5(sum), n
	return nil
}
