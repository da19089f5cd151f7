package looping

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// ErrNoState is wrapped by StateStore.Load when nothing has been saved yet.
var ErrNoState = errors.New("looping: no saved state")

// StateStore keeps a producer's State between invocations.
//
// Save replaces the stored state atomically: after a crash at any moment,
// Load returns either the previous state or the new one, never a mixture.
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

// FileStore keeps the state in a local file, replaced atomically (a
// temporary file in the same directory, fsync, rename, fsync of the
// directory).
type FileStore struct {
	path string
	mu   sync.Mutex
}

// NewFileStore returns a store at path; its directory is created on the
// first Save.
func NewFileStore(path string) *FileStore { return &FileStore{path: path} }

func (f *FileStore) String() string { return f.path }

// Load implements StateStore.
func (f *FileStore) Load(ctx context.Context) (*State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("looping: load state %s: %w", f.path, ErrNoState)
	}
	if err != nil {
		return nil, fmt.Errorf("looping: load state: %w", err)
	}
	s, err := DecodeState(b)
	if err != nil {
		return nil, fmt.Errorf("looping: load state %s: %w", f.path, err)
	}
	return s, nil
}

// Save implements StateStore.
func (f *FileStore) Save(ctx context.Context, s *State) error {
	b, err := s.Encode()
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := writeFileAtomic(f.path, b); err != nil {
		return fmt.Errorf("looping: save state %s: %w", f.path, err)
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
}

var _ S3API = (*s3.Client)(nil)

// S3Store keeps the state in one S3 object. A PutObject replaces an object
// atomically, so a reader sees the old or the new state.
type S3Store struct {
	c           S3API
	bucket, key string
}

// NewS3Store returns a store for s3://bucket/key.
func NewS3Store(c S3API, bucket, key string) *S3Store {
	return &S3Store{c: c, bucket: bucket, key: key}
}

func (s *S3Store) String() string { return "s3://" + s.bucket + "/" + s.key }

// Load implements StateStore.
func (s *S3Store) Load(ctx context.Context) (*State, error) {
	out, err := s.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.key)})
	if err != nil {
		var nk *s3types.NoSuchKey
		if errors.As(err, &nk) {
			return nil, fmt.Errorf("looping: load state %s: %w", s, ErrNoState)
		}
		return nil, fmt.Errorf("looping: load state %s: %w", s, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("looping: load state %s: %w", s, err)
	}
	st, err := DecodeState(b)
	if err != nil {
		return nil, fmt.Errorf("looping: load state %s: %w", s, err)
	}
	return st, nil
}

// Save implements StateStore.
func (s *S3Store) Save(ctx context.Context, st *State) error {
	b, err := st.Encode()
	if err != nil {
		return err
	}
	_, err = s.c.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(s.key),
		Body:          bytes.NewReader(b),
		ContentLength: aws.Int64(int64(len(b))),
		ContentType:   aws.String("application/json"),
	})
	if err != nil {
		return fmt.Errorf("looping: save state %s: %w", s, err)
	}
	return nil
}

// MemoryStore keeps the state in memory, encoded as it would be on disk,
// for tests and the embedded dev mode.
type MemoryStore struct {
	mu    sync.Mutex
	b     []byte
	saves int
	// FailSave, when set, is called before each Save; a non-nil error
	// fails that Save (tests use it to inject storage faults).
	FailSave func(n int) error
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{} }

func (m *MemoryStore) String() string { return "memory" }

// Load implements StateStore.
func (m *MemoryStore) Load(ctx context.Context) (*State, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.b == nil {
		return nil, fmt.Errorf("looping: load state: %w", ErrNoState)
	}
	return DecodeState(m.b)
}

// Save implements StateStore.
func (m *MemoryStore) Save(ctx context.Context, s *State) error {
	b, err := s.Encode()
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.FailSave != nil {
		if err := m.FailSave(m.saves); err != nil {
			return fmt.Errorf("looping: save state: %w", err)
		}
	}
	m.b = b
	m.saves++
	return nil
}

// Bytes returns the saved JSON (nil before the first Save).
func (m *MemoryStore) Bytes() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Clone(m.b)
}

// Saves returns how many times Save succeeded.
func (m *MemoryStore) Saves() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.saves
}
