package s3store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/blob/blobtest"
	"github.com/millfleet/mill/pkg/blob/memblob"
	"github.com/millfleet/mill/pkg/storage"
)

// stopAt is content that closes stop once a read reaches byte at: the
// put suspends there, keeping its checkpoint.
type stopAt struct {
	*bytes.Reader
	at   int64
	stop chan struct{}
	once sync.Once
}

func (s *stopAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.at {
		s.once.Do(func() { close(s.stop) })
	}
	return s.Reader.ReadAt(p, off)
}

// resumeFixture is a store, content of four parts (the last short), and
// what it takes to put it resumably.
type resumeFixture struct {
	client *s3.Client
	bucket string
	s      *Store
	cps    *memblob.Store
}

const resumeSpace = "resume"

func newResumeFixture(t *testing.T) *resumeFixture {
	client, bucket := setupBucket(t)
	cfg := testConfig
	cfg.Bucket, cfg.Prefix = bucket, "stores/"+testenv.Unique()+"/"
	s, err := New(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSpace(t.Context(), resumeSpace); err != nil {
		t.Fatal(err)
	}
	return &resumeFixture{client: client, bucket: bucket, s: s, cps: memblob.New(nil)}
}

func resumeContent(seed byte) []byte {
	b := make([]byte, 3*testConfig.PartSize+1234)
	for i := range b {
		b[i] = byte(i*31) ^ seed
	}
	return b
}

// put writes data to id resumably under checkpoint key "cp" for source
// src; stopAt > 0 suspends the put once a read reaches that byte.
func (f *resumeFixture) put(t *testing.T, id string, data []byte, src string, stopAtByte int64) (*storage.Info, error) {
	t.Helper()
	sum, _, _ := storage.MD5Hex(bytes.NewReader(data))
	rs := &storage.Resume{Checkpoints: f.cps, Key: "cp", Source: src}
	var r io.Reader = bytes.NewReader(data)
	if stopAtByte > 0 {
		st := &stopAt{Reader: bytes.NewReader(data), at: stopAtByte, stop: make(chan struct{})}
		rs.Stop, r = st.stop, st
	}
	return f.s.Put(t.Context(), resumeSpace, id, r, storage.PutOptions{Size: int64(len(data)), Checksum: sum,
		Transfer: storage.Transfer{Streams: 1}, Resume: rs})
}

// suspended puts data up to about its second part and returns the
// checkpoint kept.
func (f *resumeFixture) suspended(t *testing.T, id string, data []byte, src string) checkpoint {
	t.Helper()
	if _, err := f.put(t, id, data, src, 2*testConfig.PartSize); !errors.Is(err, storage.ErrSuspended) {
		t.Fatalf("suspended put: %v", err)
	}
	b, err := f.cps.Get(t.Context(), "cp")
	if err != nil {
		t.Fatal(err)
	}
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatal(err)
	}
	if len(cp.Parts) == 0 || cp.Hashed == 0 {
		t.Fatalf("suspended put kept no progress: %+v", cp)
	}
	return cp
}

func (f *resumeFixture) save(t *testing.T, v any) {
	t.Helper()
	b, ok := v.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.cps.Put(t.Context(), "cp", b); err != nil {
		t.Fatal(err)
	}
}

// content reads an item back whole.
func (f *resumeFixture) content(t *testing.T, id string) []byte {
	t.Helper()
	rc, _, err := f.s.Get(t.Context(), resumeSpace, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// uploadAlive reports whether S3 still lists the upload.
func (f *resumeFixture) uploadAlive(t *testing.T, key, id string) bool {
	_, err := f.client.ListParts(t.Context(), &s3.ListPartsInput{Bucket: aws.String(f.bucket), Key: aws.String(key), UploadId: aws.String(id)})
	return err == nil
}

// TestResumeContinues: a suspended put resumes from its checkpoint, sends
// only the parts not yet uploaded, and leaves no checkpoint behind.
func TestResumeContinues(t *testing.T) {
	f := newResumeFixture(t)
	data := resumeContent(1)
	cp := f.suspended(t, "item", data, "rev-1")
	if _, err := f.put(t, "item", data, "rev-1", 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.content(t, "item"), data) {
		t.Fatal("resumed put wrote other bytes")
	}
	if f.uploadAlive(t, cp.Key, cp.UploadID) {
		t.Error("the resumed upload is still open after completion")
	}
	if keys := blobtest.Keys(t, f.cps); len(keys) != 0 {
		t.Errorf("checkpoints left: %v", keys)
	}
}

// TestResumeHostileCheckpoint: a checkpoint is input. Whatever it says —
// another key, bucket or source, parts S3 does not list, a hash state of
// other bytes, nonsense — the put writes exactly its own content to its
// own key (or fails without writing), and never touches another key's
// upload.
func TestResumeHostileCheckpoint(t *testing.T) {
	f := newResumeFixture(t)
	data, other := resumeContent(1), resumeContent(2)
	ctx := t.Context()
	// Another item's live upload that a forged checkpoint will point at.
	o, _ := f.s.contentKey(resumeSpace, "other")
	otherKey := o.key
	otherUp, err := f.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(f.bucket), Key: aws.String(otherKey)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.s.abort(context.Background(), o, aws.ToString(otherUp.UploadId)) })

	otherSums := storage.NewSums()
	otherSums.Write(other[:2*testConfig.PartSize])
	otherState, _ := otherSums.MarshalBinary()

	// An upload of this key holding other bytes (its checkpoint aside).
	swapped := func(cp *checkpoint) any {
		otherCP := f.suspended(t, "item-parts-of-other-bytes", other, "rev-0")
		if err := f.cps.Delete(ctx, "cp"); err != nil {
			t.Fatal(err)
		}
		mine := f.suspended(t, "item-parts-of-other-bytes", data, "rev-1")
		mine.UploadID, mine.Parts = otherCP.UploadID, otherCP.Parts
		return mine
	}

	for _, c := range []struct {
		name  string
		forge func(cp *checkpoint) any
		// mayFail: the put may refuse (with ErrChecksumMismatch) rather
		// than recover; it must then write nothing.
		mayFail bool
	}{
		{"another key's upload", func(cp *checkpoint) any {
			cp.Key, cp.UploadID = otherKey, aws.ToString(otherUp.UploadId)
			return cp
		}, false},
		{"another bucket", func(cp *checkpoint) any { cp.Bucket = f.bucket + "-x"; return cp }, false},
		{"stale source", func(cp *checkpoint) any { cp.Source = "rev-0"; return cp }, false},
		{"unlisted part", func(cp *checkpoint) any { cp.Parts[0].ETag = `"0123456789abcdef0123456789abcdef"`; return cp }, false},
		{"part number out of range", func(cp *checkpoint) any { cp.Parts[0].Num = 99; return cp }, false},
		{"duplicate part", func(cp *checkpoint) any { cp.Parts = append(cp.Parts, cp.Parts[0]); return cp }, false},
		{"part of the wrong size", func(cp *checkpoint) any { cp.Parts[0].Size--; return cp }, false},
		{"hashed past the end", func(cp *checkpoint) any { cp.Hashed = 1 << 40; return cp }, false},
		{"hashed off a part boundary", func(cp *checkpoint) any { cp.Hashed--; return cp }, false},
		{"hash state of another length", func(cp *checkpoint) any { cp.Hashed = testConfig.PartSize; return cp }, false},
		{"hash state garbage", func(cp *checkpoint) any { cp.Sums = []byte("mill-sums-1 and then nonsense"); return cp }, false},
		{"hash state of other bytes", func(cp *checkpoint) any {
			cp.Hashed, cp.Sums = 2*testConfig.PartSize, otherState
			return cp
		}, true},
		// The parts S3 lists alike, the hash state genuine, but the parts
		// hold other bytes: S3 refuses the completion (their CRCs do not
		// combine to the content's); Mill refuses it first, for the
		// services that do not check.
		{"parts of other bytes", swapped, true},
		{"newer version", func(cp *checkpoint) any { cp.V = 2; return cp }, false},
		{"no upload", func(cp *checkpoint) any { cp.UploadID = ""; return cp }, false},
		{"not JSON", func(*checkpoint) any { return []byte("\x00\x01 not a checkpoint") }, false},
		{"JSON of another shape", func(*checkpoint) any { return []byte(`{"v":1,"parts":{"a":1}}`) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := "item-" + strings.ReplaceAll(c.name, " ", "-")
			cp := f.suspended(t, id, data, "rev-1")
			f.save(t, c.forge(&cp))
			_, err := f.put(t, id, data, "rev-1", 0)
			switch {
			case err == nil:
				if !bytes.Equal(f.content(t, id), data) {
					t.Fatal("the put wrote other bytes")
				}
			case c.mayFail && errors.Is(err, storage.ErrChecksumMismatch):
				t.Logf("refused: %v", err)
				if _, herr := f.s.Head(ctx, resumeSpace, id); !errors.Is(herr, storage.ErrNotFound) {
					t.Fatalf("a refused put left an item: %v", herr)
				}
				// Nothing of it is kept: the next attempt starts afresh.
				if _, err := f.put(t, id, data, "rev-1", 0); err != nil {
					t.Fatalf("put after a refused resume: %v", err)
				}
				if !bytes.Equal(f.content(t, id), data) {
					t.Fatal("the put after a refused resume wrote other bytes")
				}
			default:
				t.Fatalf("put: %v", err)
			}
			if !f.uploadAlive(t, otherKey, aws.ToString(otherUp.UploadId)) {
				t.Fatal("another key's upload was aborted")
			}
			if _, err := f.s.Head(ctx, resumeSpace, "other"); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("another key was written: %v", err)
			}
			if keys := blobtest.Keys(t, f.cps); len(keys) != 0 {
				t.Errorf("checkpoints left: %v", keys)
			}
		})
	}
}

// TestResumeStaleSourceAbortsItsUpload: when the source changed since the
// checkpoint, its upload (of this key) is aborted and the new content
// written from the start.
func TestResumeStaleSourceAbortsItsUpload(t *testing.T) {
	f := newResumeFixture(t)
	old, data := resumeContent(3), resumeContent(4)
	cp := f.suspended(t, "item", old, "rev-1")
	if _, err := f.put(t, "item", data, "rev-2", 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.content(t, "item"), data) {
		t.Fatal("wrote other bytes than the new source's")
	}
	if f.uploadAlive(t, cp.Key, cp.UploadID) {
		t.Error("the stale checkpoint's upload is still open")
	}
}
