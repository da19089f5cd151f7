package looping

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/blob/dirblob"
	"github.com/millfleet/mill/pkg/blob/memblob"
	"github.com/millfleet/mill/pkg/blob/s3blob"
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
// object, through client) or a local file path. The key, or the file's
// name, must be a blob key (blob.CheckKey: A-Z a-z 0-9 . _ -, and "/"
// between the key's elements).
func OpenStateStore(location string, client s3blob.API) (StateStore, error) {
	if rest, ok := strings.CutPrefix(location, "s3://"); ok {
		bucket, key, _ := strings.Cut(rest, "/")
		if bucket == "" || key == "" || strings.HasSuffix(key, "/") {
			return nil, fmt.Errorf("looping: state location %q: want s3://bucket/key", location)
		}
		if err := blob.CheckKey(key); err != nil {
			return nil, fmt.Errorf("looping: state location %q: %w", location, err)
		}
		if client == nil {
			return nil, fmt.Errorf("looping: state location %q: no S3 client", location)
		}
		return NewS3Store(client, bucket, key), nil
	}
	if location == "" {
		return nil, errors.New("looping: empty state location (want a file path or s3://bucket/key)")
	}
	if strings.HasSuffix(location, "/") {
		return nil, fmt.Errorf("looping: state location %q: a directory (want a file path)", location)
	}
	if err := blob.CheckKey(filepath.Base(location)); err != nil {
		return nil, fmt.Errorf("looping: state location %q: file name: %w", location, err)
	}
	return NewFileStore(location), nil
}

// FileStore keeps the state in local files: the base at the path, the
// journal's entries under PATH.journal/ (journal.go), in a dirblob.Store of
// the path's directory, which writes each atomically (a temporary file in
// the same directory, fsync, rename, fsync of the directory).
type FileStore struct{ *journal }

// NewFileStore returns a store at path; its directory is created on the
// first Save.
func NewFileStore(path string) *FileStore {
	return &FileStore{newJournal(dirblob.New(filepath.Dir(path), nil), filepath.Base(path), path)}
}

// S3Store keeps the state in S3 objects: the base at s3://bucket/key, the
// journal's entries under key.journal/ (journal.go), through an
// s3blob.Store. A PutObject replaces an object atomically. In a versioned
// bucket every save leaves the version it replaced or deleted; the state
// bucket's lifecycle rule (millctl setup, infra/core.yaml) expires those
// noncurrent versions.
type S3Store struct{ *journal }

// NewS3Store returns a store for s3://bucket/key.
func NewS3Store(c s3blob.API, bucket, key string) *S3Store {
	b := s3blob.New(c, bucket, "", &s3blob.Options{ContentType: "application/json"})
	return &S3Store{newJournal(b, key, "s3://"+bucket+"/"+key)}
}

// MemoryStore keeps the state in memory, laid out and encoded as the other
// stores keep it (a base and a journal), for tests and the embedded dev
// mode.
type MemoryStore struct {
	*journal
	blobs *memblob.Store
	mu    sync.Mutex
	saves int
	// FailSave, when set, is called before each Save; a non-nil error
	// fails that Save (tests use it to inject storage faults).
	FailSave func(n int) error
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	b := memblob.New(nil)
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
