package azstore

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"golang.org/x/sync/errgroup"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

func headers(md5hex, mime string) *blob.HTTPHeaders {
	b, _ := hex.DecodeString(md5hex)
	return &blob.HTTPHeaders{BlobContentMD5: b, BlobContentType: to.Ptr(objstore.MimeOr(mime))}
}

// putSmall checks buffered content and sends it in one Put Blob whose
// transactional MD5 Azure verifies.
func (s *Store) putSmall(ctx context.Context, key, space, id string, data []byte, want string, opts storage.PutOptions) (*storage.Info, error) {
	sums := storage.NewSums()
	sums.Write(data)
	return s.commit(ctx, key, space, id, sums, want, opts, func(m map[string]*string) error {
		sum := md5.Sum(data)
		_, err := s.c.NewBlockBlobClient(key).Upload(ctx, nopCloser{bytes.NewReader(data)}, &blockblob.UploadOptions{
			Metadata:                m,
			HTTPHeaders:             headers(sums.MD5(), opts.MimeType),
			TransactionalValidation: blob.TransferValidationTypeMD5(sum[:]),
		})
		return err
	})
}

// commit checks the content Mill read (sums) against the promised size
// and expected MD5, keeps what the item replaces recoverable, then writes
// it with write (given the item's metadata) and returns its Info.
func (s *Store) commit(ctx context.Context, key, space, id string, sums *storage.Sums, want string, opts storage.PutOptions, write func(m map[string]*string) error) (*storage.Info, error) {
	if err := objstore.SizeErr(sums.Len(), opts.Size); err != nil {
		return nil, err
	}
	if err := objstore.CheckMD5(sums.MD5(), want); err != nil {
		return nil, err
	}
	m, err := metadata(sums.MD5(), storage.CRC64NVMEBase64(sums.CRC64NVME()), opts.Properties)
	if err != nil {
		return nil, err
	}
	undo, err := s.preserve(ctx, key, space, id, nil, storage.ReplacedByOverwrite)
	if err != nil {
		return nil, err
	}
	if err := write(m); err != nil {
		undo()
		return nil, err
	}
	p, err := s.props(ctx, key)
	if err != nil {
		return nil, err
	}
	return p.info(id), nil
}

// putBlocks stages the content in blocks of PartSize, Streams at a time,
// each with a transactional MD5 that Azure verifies, while Mill hashes the
// whole stream; only when the stream ends with the promised size and MD5
// does it commit the block list, setting Content-MD5 to the MD5 it
// measured. Until the commit nothing is visible; blocks never committed
// are discarded by Azure after a week.
func (s *Store) putBlocks(ctx context.Context, key, space, id string, r io.Reader, want string, opts storage.PutOptions) (*storage.Info, error) {
	bb := s.c.NewBlockBlobClient(key)
	upload := objstore.RandHex()[:16]
	sums := storage.NewSums()
	pool := sync.Pool{New: func() any { b := make([]byte, s.cfg.PartSize); return &b }}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.Streams)
	var ids []string
	for n := 0; ; n++ {
		if n >= MaxBlocks {
			return nil, fmt.Errorf("azstore: more than %d blocks of %d bytes", MaxBlocks, s.cfg.PartSize)
		}
		bufp := pool.Get().(*[]byte)
		k, err := io.ReadFull(r, *bufp)
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			pool.Put(bufp)
			_ = g.Wait()
			return nil, err
		}
		if k == 0 {
			pool.Put(bufp)
			break
		}
		block := (*bufp)[:k]
		sums.Write(block)
		bid := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "mill-%s-%06d", upload, n))
		ids = append(ids, bid)
		g.Go(func() error {
			defer pool.Put(bufp)
			sum := md5.Sum(block)
			_, err := bb.StageBlock(gctx, bid, nopCloser{bytes.NewReader(block)}, &blockblob.StageBlockOptions{TransactionalValidation: blob.TransferValidationTypeMD5(sum[:])})
			return err
		})
		if gctx.Err() != nil || k < len(*bufp) {
			break
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.commit(ctx, key, space, id, sums, want, opts, func(m map[string]*string) error {
		_, err := bb.CommitBlockList(ctx, ids, &blockblob.CommitBlockListOptions{Metadata: m, HTTPHeaders: headers(sums.MD5(), opts.MimeType)})
		return err
	})
}
