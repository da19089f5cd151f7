package s3store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/blob/s3blob"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// A resumable multipart upload (PutOptions.Resume) keeps a checkpoint: the
// upload, the parts S3 acknowledged with their ETags and CRC64NVMEs, and
// the MD5 and CRC state of the bytes read in order so far. It is saved
// (one PUT, a few hundred bytes plus ~70 per part) whenever a part
// completes or the hashed prefix grows, one save at a time, and deleted
// when the upload completes or is aborted. A resume trusts none of it
// blindly: the checkpoint must name this bucket, key, content (Source,
// size, MD5, metadata) and part size, its hash state must be well formed
// and cover whole parts, and every part it lists must be listed by S3
// (ListParts) with the same ETag, CRC64NVME and size; a part that is not
// is uploaded again, a checkpoint that fails the rest is discarded (and
// its upload aborted when it is this key's). What the checkpoint cannot
// prove — the hash state of the bytes before it — is checked at the end
// by S3 itself: the full-object CRC64NVME computed from the parts' bytes
// must equal the one from the state, or S3 refuses the upload.

// checkpointVersion is the format of checkpoint.
const checkpointVersion = 1

type cpPart struct {
	Num  int32  `json:"n"`
	ETag string `json:"e"`
	CRC  string `json:"c"`
	Size int64  `json:"s"`
}

type checkpoint struct {
	V        int      `json:"v"`
	Bucket   string   `json:"bucket"`
	Key      string   `json:"key"`
	UploadID string   `json:"upload_id"`
	Source   string   `json:"source"`
	Meta     string   `json:"meta"`
	MD5      string   `json:"md5"`
	Size     int64    `json:"size"`
	PartSize int64    `json:"part_size"`
	Hashed   int64    `json:"hashed"`
	Sums     []byte   `json:"sums"`
	Parts    []cpPart `json:"parts"`
}

// metaDigest names an upload's metadata and content type.
func metaDigest(meta map[string]string, mime string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		fmt.Fprintf(h, "%d:%s=%d:%s;", len(k), k, len(meta[k]), meta[k])
	}
	fmt.Fprintf(h, "type=%s", mime)
	return hex.EncodeToString(h.Sum(nil))
}

// checkpointer saves an upload's progress in the background.
type checkpointer struct {
	s          *Store
	rs         *storage.Resume
	u          *upload
	meta, want string

	kick     chan struct{}
	quit     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// resume loads the checkpoint and, when it holds, fills the upload from it.
func (c *checkpointer) resume(ctx context.Context) error {
	b, err := c.rs.Checkpoints.Get(ctx, c.rs.Key)
	if errors.Is(err, blob.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load checkpoint %s: %w", c.rs.Key, err)
	}
	var cp checkpoint
	why := c.check(b, &cp)
	if why == nil {
		why = c.verifyParts(ctx, &cp)
	}
	if why != nil {
		if errors.Is(why, errTransient) {
			return why
		}
		// Not resumable: start afresh, and leave nothing of it behind
		// (only an upload of this very key is ever aborted).
		if cp.UploadID != "" && cp.Bucket == c.u.bucket && cp.Key == c.u.target {
			c.s.abort(ctx, object{bucket: cp.Bucket, key: cp.Key}, cp.UploadID)
		}
		c.drop(ctx)
		return nil
	}
	sums := storage.NewSums()
	_ = sums.UnmarshalBinary(cp.Sums) // checked
	c.u.id, c.u.hashed, c.u.state, c.u.sums = cp.UploadID, cp.Hashed, cp.Sums, sums
	for _, p := range cp.Parts {
		c.u.parts[p.Num] = p
	}
	return nil
}

var errTransient = errors.New("checkpoint: could not be verified now")

// check validates a checkpoint against this upload.
func (c *checkpointer) check(b []byte, cp *checkpoint) error {
	if err := json.Unmarshal(b, cp); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	u := c.u
	var errs []error
	bad := func(what string, got, want any) {
		if got != want {
			errs = append(errs, fmt.Errorf("checkpoint %s %v, this upload %v", what, got, want))
		}
	}
	bad("version", cp.V, checkpointVersion)
	bad("bucket", cp.Bucket, u.bucket)
	bad("key", cp.Key, u.target)
	bad("source", cp.Source, c.rs.Source)
	bad("metadata", cp.Meta, c.meta)
	bad("MD5", cp.MD5, c.want)
	bad("size", cp.Size, u.size)
	bad("part size", cp.PartSize, u.partSize)
	if cp.UploadID == "" {
		errs = append(errs, errors.New("checkpoint: no upload"))
	}
	if cp.Hashed < 0 || cp.Hashed > u.size || (cp.Hashed%u.partSize != 0 && cp.Hashed != u.size) {
		errs = append(errs, fmt.Errorf("checkpoint: hashed %d bytes is not a part boundary", cp.Hashed))
	}
	var sums storage.Sums
	if err := sums.UnmarshalBinary(cp.Sums); err != nil {
		errs = append(errs, err)
	} else if sums.Len() != cp.Hashed {
		errs = append(errs, fmt.Errorf("checkpoint: hash state of %d bytes, hashed %d", sums.Len(), cp.Hashed))
	}
	seen := map[int32]bool{}
	last := int32((u.size + u.partSize - 1) / u.partSize)
	for _, p := range cp.Parts {
		want := u.partSize
		if p.Num == last {
			want = u.size - int64(last-1)*u.partSize
		}
		if p.Num < 1 || p.Num > last || seen[p.Num] || p.Size != want || p.ETag == "" || p.CRC == "" {
			errs = append(errs, fmt.Errorf("checkpoint: part %d of %d bytes does not fit", p.Num, p.Size))
		}
		seen[p.Num] = true
	}
	return errors.Join(errs...)
}

// verifyParts keeps only the checkpoint's parts that S3 lists alike.
func (c *checkpointer) verifyParts(ctx context.Context, cp *checkpoint) error {
	listed := map[int32]cpPart{}
	p := s3.NewListPartsPaginator(c.s.client, &s3.ListPartsInput{
		Bucket: aws.String(cp.Bucket), Key: aws.String(cp.Key), UploadId: aws.String(cp.UploadID),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if errors.Is(mapErr(err), storage.ErrNotFound) {
			return fmt.Errorf("checkpoint: upload %s is gone: %w", cp.UploadID, err)
		}
		if err != nil {
			return fmt.Errorf("%w: list parts: %w", errTransient, err)
		}
		for _, l := range page.Parts {
			n := aws.ToInt32(l.PartNumber)
			listed[n] = cpPart{Num: n, ETag: aws.ToString(l.ETag), CRC: aws.ToString(l.ChecksumCRC64NVME), Size: aws.ToInt64(l.Size)}
		}
	}
	kept := cp.Parts[:0]
	for _, part := range cp.Parts {
		l, ok := listed[part.Num]
		if ok && l.CRC == "" {
			// S3 lists the checksum of every part of an upload made
			// with one; some emulators list none. The ETag still binds
			// the part, and S3 checks the whole at completion.
			l.CRC = part.CRC
		}
		if ok && l == part {
			kept = append(kept, part)
		}
	}
	cp.Parts = kept
	return nil
}

// start saves the checkpoint now and whenever changed is called.
func (c *checkpointer) start(ctx context.Context) {
	c.kick, c.quit = make(chan struct{}, 1), make(chan struct{})
	c.changed()
	c.wg.Go(func() {
		for {
			select {
			case <-c.quit:
				return
			case <-c.kick:
				// A failed save is not fatal: the next one, or the
				// final flush, carries the same progress and more.
				_ = c.save(ctx)
			}
		}
	})
}

// changed asks for a save (coalesced with one pending).
func (c *checkpointer) changed() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// stop ends the background saves.
func (c *checkpointer) stop() {
	c.stopOnce.Do(func() {
		if c.quit != nil {
			close(c.quit)
			c.wg.Wait()
		}
	})
}

func (c *checkpointer) save(ctx context.Context) error {
	u := c.u
	u.mu.Lock()
	cp := checkpoint{V: checkpointVersion, Bucket: u.bucket, Key: u.target, UploadID: u.id, Source: c.rs.Source, Meta: c.meta,
		MD5: c.want, Size: u.size, PartSize: u.partSize, Hashed: u.hashed, Sums: u.state}
	for _, p := range u.parts {
		cp.Parts = append(cp.Parts, p)
	}
	u.mu.Unlock()
	if cp.Sums == nil {
		st, err := storage.NewSums().MarshalBinary()
		if err != nil {
			return err
		}
		cp.Sums = st
	}
	slices.SortFunc(cp.Parts, func(a, b cpPart) int { return int(a.Num - b.Num) })
	b, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	return c.rs.Checkpoints.Put(ctx, c.rs.Key, b)
}

// flush saves the final state, even after ctx ended.
func (c *checkpointer) flush(ctx context.Context) {
	c.stop()
	fctx, cancel := objstore.Detached(ctx)
	defer cancel()
	_ = c.save(fctx)
}

// drop deletes the checkpoint, even after ctx ended.
func (c *checkpointer) drop(ctx context.Context) {
	dctx, cancel := objstore.Detached(ctx)
	defer cancel()
	_ = c.rs.Checkpoints.Delete(dctx, c.rs.Key)
}

// NewCheckpoints returns the store of transfer checkpoints (Resume's
// Checkpoints) in bucket under prefix (normally ending in '/'): Mill's
// state bucket, whose lifecycle rule expires what no task came back for
// (millctl setup).
func NewCheckpoints(client s3blob.API, bucket, prefix string) blob.Store {
	return s3blob.New(client, bucket, prefix, &s3blob.Options{MaxSize: storage.MaxCheckpoint, ContentType: "application/json"})
}

// keepForResume reports whether a multipart upload that failed with err
// is worth resuming: not when its content or source proved wrong.
func keepForResume(err error) bool {
	for _, e := range []error{storage.ErrChecksumMismatch, storage.ErrChanged, storage.ErrNotFound, storage.ErrInvalidID, storage.ErrPropertiesTooLarge} {
		if errors.Is(err, e) {
			return false
		}
	}
	return true
}
