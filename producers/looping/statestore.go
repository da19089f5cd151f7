package looping

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/pkg/awsconfig"
)

// ErrNoState is wrapped by StateStore.Load when nothing has been saved yet.
var ErrNoState = errors.New("looping: no saved state")

// StateStore keeps a producer's State between invocations.
//
// Save replaces the stored state atomically: after a crash at any moment,
// Load returns either the previous state or the new one, never a mixture.
// It writes what changed since the state the store last loaded or saved
// (a journal entry), or the whole state when that is cheaper over time
// (journal.go).
// Load returns an error wrapping ErrNoState when nothing was saved, and
// ErrState when what is stored cannot be read. Implementations are safe
// for concurrent use.
type StateStore interface {
	Load(ctx context.Context) (*State, error)
	Save(ctx context.Context, s *State) error
	// String names the location for logs ("/var/lib/mill/dup.json",
	// "s3://bucket/key", "memory").
	String() string
}

// OpenStateStore returns the store for location: "s3://bucket/key" (an S3
// object, through client) or a local file path.
func OpenStateStore(location string, client S3API) (StateStore, error) {
	if rest, ok := strings.CutPrefix(location, "s3://"); ok {
		bucket, key, _ := strings.Cut(rest, "/")
		if bucket == "" || key == "" || strings.HasSuffix(key, "/") {
			return nil, fmt.Errorf("looping: state location %q: want s3://bucket/key", location)
		}
		if client == nil {
			return nil, fmt.Errorf("looping: state location %q: no S3 client", location)
		}
		return NewS3Store(client, bucket, key), nil
	}
	if location == "" {
		return nil, errors.New("looping: empty state location (want a file path or s3://bucket/key)")
	}
	return NewFileStore(location), nil
}

// FileStore keeps the state in local files: the base at the path, the
// journal's entries under PATH.journal/ (journal.go), each written
// atomically (a temporary file in the same directory, fsync, rename, fsync
// of the directory).
type FileStore struct{ *journal }

// NewFileStore returns a store at path; its directory is created on the
// first Save.
func NewFileStore(path string) *FileStore {
	return &FileStore{newJournal(fileBlobs{}, path, path)}
}

// fileBlobs are files named by their paths.
type fileBlobs struct{}

func (fileBlobs) get(_ context.Context, name string) ([]byte, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errBlobMissing
	}
	return b, err
}

func (fileBlobs) put(_ context.Context, name string, b []byte) error {
	return writeFileAtomic(name, b)
}

// list walks the directory prefix names (a journal's, ending in "/").
func (fileBlobs) list(_ context.Context, prefix string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(prefix, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			out = append(out, filepath.ToSlash(p))
		}
		return nil
	})
	return out, err
}

func (fileBlobs) del(_ context.Context, names []string) error {
	dirs := map[string]bool{}
	for _, n := range names {
		if err := os.Remove(n); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		dirs[filepath.Dir(n)] = true
	}
	for d := range dirs {
		_ = os.Remove(d) // only when empty
	}
	return nil
}

func writeFileAtomic(path string, b []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(b); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// Make the rename itself durable.
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// S3API is the part of the S3 client S3Store uses.
type S3API interface {
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
}

var _ S3API = (*s3.Client)(nil)

// S3Store keeps the state in S3 objects: the base at s3://bucket/key, the
// journal's entries under key.journal/ (journal.go). A PutObject replaces
// an object atomically. In a versioned bucket every save leaves the
// version it replaced or deleted; the state bucket's lifecycle rule
// (millctl setup, infra/core.yaml) expires those noncurrent versions.
type S3Store struct{ *journal }

// NewS3Store returns a store for s3://bucket/key.
func NewS3Store(c S3API, bucket, key string) *S3Store {
	return &S3Store{newJournal(s3Blobs{c: c, bucket: bucket}, key, "s3://"+bucket+"/"+key)}
}

// s3Blobs are the objects of a bucket, named by their keys.
type s3Blobs struct {
	c      S3API
	bucket string
}

func (b s3Blobs) get(ctx context.Context, key string) ([]byte, error) {
	out, err := b.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.bucket), Key: aws.String(key)}, awsconfig.ReadWhole)
	if err != nil {
		var nk *s3types.NoSuchKey
		if errors.As(err, &nk) {
			return nil, errBlobMissing
		}
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

func (b s3Blobs) put(ctx context.Context, key string, body []byte) error {
	_, err := b.c.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(b.bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
		ContentType:   aws.String("application/json"),
	})
	return err
}

func (b s3Blobs) list(ctx context.Context, prefix string) ([]string, error) {
	var out []string
	p := s3.NewListObjectsV2Paginator(b.c, &s3.ListObjectsV2Input{Bucket: aws.String(b.bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			out = append(out, aws.ToString(o.Key))
		}
	}
	return out, nil
}

// del deletes keys, 1000 (DeleteObjects' most) per request.
func (b s3Blobs) del(ctx context.Context, keys []string) error {
	for chunk := range slices.Chunk(keys, 1000) {
		ids := make([]s3types.ObjectIdentifier, len(chunk))
		for i, k := range chunk {
			ids[i] = s3types.ObjectIdentifier{Key: aws.String(k)}
		}
		out, err := b.c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(b.bucket),
			Delete: &s3types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return err
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("delete %s: %s: %s (and %d more)", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message), len(out.Errors)-1)
		}
	}
	return nil
}

// MemoryStore keeps the state in memory, laid out and encoded as the other
// stores keep it (a base and a journal), for tests and the embedded dev
// mode.
type MemoryStore struct {
	*journal
	blobs *memBlobs
	mu    sync.Mutex
	saves int
	// FailSave, when set, is called before each Save; a non-nil error
	// fails that Save (tests use it to inject storage faults).
	FailSave func(n int) error
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	b := &memBlobs{m: map[string][]byte{}}
	return &MemoryStore{journal: newJournal(b, "state.json", "memory"), blobs: b}
}

// Save implements StateStore.
func (m *MemoryStore) Save(ctx context.Context, s *State) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.FailSave != nil {
		if err := m.FailSave(m.saves); err != nil {
			return fmt.Errorf("looping: save state: %w", err)
		}
	}
	if err := m.journal.Save(ctx, s); err != nil {
		return err
	}
	m.saves++
	return nil
}

// Bytes returns the JSON of the saved state, as State.Encode writes it
// (nil before the first Save).
func (m *MemoryStore) Bytes() []byte {
	st, err := newJournal(m.blobs, "state.json", "memory").Load(context.Background())
	if err != nil {
		return nil
	}
	b, _ := st.Encode()
	return b
}

// Saves returns how many times Save succeeded.
func (m *MemoryStore) Saves() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.saves
}

// memBlobs are byte strings in a map.
type memBlobs struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (b *memBlobs) get(_ context.Context, name string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[name]
	if !ok {
		return nil, errBlobMissing
	}
	return bytes.Clone(v), nil
}

func (b *memBlobs) put(_ context.Context, name string, v []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.m[name] = bytes.Clone(v)
	return nil
}

func (b *memBlobs) list(_ context.Context, prefix string) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for k := range b.m {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out, nil
}

func (b *memBlobs) del(_ context.Context, names []string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range names {
		delete(b.m, n)
	}
	return nil
}
