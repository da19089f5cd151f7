package gcsstore

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
	"time"

	"google.golang.org/api/googleapi"
	raw "google.golang.org/api/storage/v1"
)

// attrs are the attributes of one generation of an object, as the JSON
// API describes it.
type attrs struct {
	Name        string
	Size        int64
	ContentType string
	Updated     time.Time
	Generation  int64
	// Metageneration counts the changes of the generation's metadata.
	Metageneration int64
	MD5            []byte // nil for a composite object
	CRC32C         uint32
	HasCRC32C      bool
	StorageClass   string
	Metadata       map[string]string
}

// attrsOf reads the JSON API's object resource.
func attrsOf(o *raw.Object) (*attrs, error) {
	if o == nil {
		return nil, errors.New("gcsstore: GCS returned no object resource")
	}
	a := &attrs{Name: o.Name, Size: int64(o.Size), ContentType: o.ContentType, Generation: o.Generation,
		Metageneration: o.Metageneration, StorageClass: o.StorageClass, Metadata: o.Metadata}
	if o.Size > 1<<62 {
		return nil, fmt.Errorf("gcsstore: object %q: size %d out of range", o.Name, o.Size)
	}
	if o.Updated != "" {
		t, err := time.Parse(time.RFC3339Nano, o.Updated)
		if err != nil {
			return nil, fmt.Errorf("gcsstore: object %q: updated %q: %w", o.Name, o.Updated, err)
		}
		a.Updated = t
	}
	if o.Md5Hash != "" {
		b, err := base64.StdEncoding.DecodeString(o.Md5Hash)
		if err != nil || len(b) != 16 {
			return nil, fmt.Errorf("gcsstore: object %q: md5Hash %q is not a base64 MD5", o.Name, o.Md5Hash)
		}
		a.MD5 = b
	}
	if o.Crc32c != "" {
		b, err := base64.StdEncoding.DecodeString(o.Crc32c)
		if err != nil || len(b) != 4 {
			return nil, fmt.Errorf("gcsstore: object %q: crc32c %q is not a base64 CRC32C", o.Name, o.Crc32c)
		}
		a.CRC32C, a.HasCRC32C = binary.BigEndian.Uint32(b), true
	}
	return a, nil
}

// objects are the JSON API calls on the store's bucket.
type objects struct {
	svc    *raw.Service
	bucket string
	// retry is the backoff of the conditionally idempotent writes.
	retry *backoff
}

// attrs reads the attributes of object key (of generation gen when gen >
// 0, else the live one).
func (b objects) attrs(ctx context.Context, key string, gen int64) (*attrs, error) {
	c := b.svc.Objects.Get(b.bucket, key).Context(ctx)
	if gen > 0 {
		c = c.Generation(gen)
	}
	o, err := c.Do()
	if err != nil {
		return nil, err
	}
	return attrsOf(o)
}

// listing is one objects.list query.
type listing struct {
	prefix, startOffset, delimiter string
	pageSize                       int64    // 0: GCS's default (1,000)
	fields                         []string // of each item; nil: all
}

// list calls each with every object of q (stopping when each returns
// false), a page of q.pageSize at a time.
func (b objects) list(ctx context.Context, q listing, each func(*attrs) (bool, error)) error {
	c := b.svc.Objects.List(b.bucket).Context(ctx).Prefix(q.prefix)
	if q.startOffset != "" {
		c = c.StartOffset(q.startOffset)
	}
	if q.delimiter != "" {
		c = c.Delimiter(q.delimiter)
	}
	if q.pageSize > 0 {
		c = c.MaxResults(q.pageSize)
	}
	if q.fields != nil {
		f := "nextPageToken,prefixes,items("
		for i, n := range q.fields {
			if i > 0 {
				f += ","
			}
			f += n
		}
		c = c.Fields(googleapi.Field(f + ")"))
	}
	token := ""
	for {
		res, err := c.PageToken(token).Do()
		if err != nil {
			return err
		}
		for _, o := range res.Items {
			a, err := attrsOf(o)
			if err != nil {
				return err
			}
			if more, err := each(a); err != nil || !more {
				return err
			}
		}
		if res.NextPageToken == "" || res.NextPageToken == token {
			return nil
		}
		token = res.NextPageToken
	}
}

// upload is one object write.
type upload struct {
	key, contentType string
	md5              []byte            // declared: GCS refuses other bytes
	metadata         map[string]string // custom metadata
	ifGen            *int64            // ifGenerationMatch: the live generation (0: none) the write replaces
	chunk            int64             // 0: one request; else a resumable upload in chunks of this size
}

// insert writes r as object u.key. A resumable upload sends a chunk only
// once it is whole or r has ended: an error from r (at its end too)
// abandons the upload before its last chunk, so nothing is committed.
func (b objects) insert(ctx context.Context, u upload, r io.Reader) (*attrs, error) {
	o := &raw.Object{Name: u.key, ContentType: u.contentType, Metadata: u.metadata}
	if u.md5 != nil {
		o.Md5Hash = base64.StdEncoding.EncodeToString(u.md5)
	}
	c := b.svc.Objects.Insert(b.bucket, o).Context(ctx).
		Media(r, googleapi.ChunkSize(int(u.chunk)), googleapi.ContentType(u.contentType))
	if u.ifGen != nil {
		c = c.IfGenerationMatch(*u.ifGen)
	}
	res, err := c.Do()
	if err != nil {
		return nil, err
	}
	return attrsOf(res)
}

// read returns the bytes of object key from off, n of them (n < 0: to
// the end): of generation gen when gen > 0, else of the live one. A whole
// read (off 0, n < 0) is checked against GCS's CRC32C of the object as it
// arrives (want when not nil, else the one GCS sends with the bytes): its
// last Read fails with a CRC32C mismatch when the bytes disagree.
func (b objects) read(ctx context.Context, key string, gen, off, n int64, want *uint32) (io.ReadCloser, error) {
	c := b.svc.Objects.Get(b.bucket, key).Context(ctx)
	if gen > 0 {
		c = c.Generation(gen)
	}
	ranged := off > 0 || n >= 0
	switch {
	case n >= 0:
		c.Header().Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	case off > 0:
		c.Header().Set("Range", fmt.Sprintf("bytes=%d-", off))
	}
	res, err := c.Download()
	if err != nil {
		return nil, err
	}
	if ranged && res.StatusCode != http.StatusPartialContent {
		res.Body.Close()
		return nil, fmt.Errorf("gcsstore: a ranged read of %q was answered %s, not 206 Partial Content", key, res.Status)
	}
	if want == nil {
		want = headerCRC32C(res.Header)
	}
	// A transcoded object (stored gzip-encoded, served decoded) has a
	// CRC32C of other bytes than those read.
	if ranged || want == nil || res.Uncompressed || res.Header.Get("Content-Encoding") != "" {
		return res.Body, nil
	}
	return &crcReader{body: res.Body, h: crc32.New(crc32.MakeTable(crc32.Castagnoli)), want: *want, name: key}, nil
}

// headerCRC32C is the CRC32C of an X-Goog-Hash header ("crc32c=<base64>,
// md5=<base64>", one or more of them), or nil.
func headerCRC32C(h http.Header) *uint32 {
	for _, v := range h.Values("X-Goog-Hash") {
		for part := range strings.SplitSeq(v, ",") {
			if s, ok := strings.CutPrefix(strings.TrimSpace(part), "crc32c="); ok {
				if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == 4 {
					c := binary.BigEndian.Uint32(b)
					return &c
				}
			}
		}
	}
	return nil
}

// crcReader checks what it reads against a CRC32C at the end.
type crcReader struct {
	body io.ReadCloser
	h    hash.Hash32
	want uint32
	name string
}

func (r *crcReader) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	r.h.Write(p[:n])
	if err == io.EOF {
		if got := r.h.Sum32(); got != r.want {
			return n, fmt.Errorf("gcsstore: read of %q: CRC32C mismatch: the bytes read have %08x, GCS holds %08x", r.name, got, r.want)
		}
	}
	return n, err
}

func (r *crcReader) Close() error { return r.body.Close() }
