package audited_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/millfleet/mill/pkg/storage"
)

// fakeStore is a minimal in-memory storage.Provider for these tests.
type fakeStore struct {
	mu     sync.Mutex
	spaces map[string]map[string]*item
	acls   map[string]map[string]string
}

type item struct {
	data []byte
	info storage.Info
}

func newFakeStore() *fakeStore {
	return &fakeStore{spaces: map[string]map[string]*item{}, acls: map[string]map[string]string{}}
}

func (f *fakeStore) Kind() storage.Kind { return storage.KindFS }

func (f *fakeStore) ListSpaces(context.Context) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.spaces)), nil
}

func (f *fakeStore) CreateSpace(_ context.Context, s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.spaces[s] == nil {
		f.spaces[s] = map[string]*item{}
	}
	return nil
}

func (f *fakeStore) DeleteSpace(_ context.Context, s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.spaces[s]) > 0 {
		return storage.ErrSpaceNotEmpty
	}
	delete(f.spaces, s)
	return nil
}

func (f *fakeStore) SpaceACLs(_ context.Context, s string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.spaces[s] == nil {
		return nil, storage.ErrNotFound
	}
	return maps.Clone(f.acls[s]), nil
}

func (f *fakeStore) SetSpaceACLs(_ context.Context, s string, a map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.spaces[s] == nil {
		return storage.ErrNotFound
	}
	f.acls[s] = maps.Clone(a)
	return nil
}

func (f *fakeStore) ListContent(_ context.Context, s, after string, limit int) ([]string, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sp := f.spaces[s]
	if sp == nil {
		return nil, false, storage.ErrNotFound
	}
	var ids []string
	for id := range sp {
		if id > after {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	if len(ids) > limit {
		return ids[:limit], true, nil
	}
	return ids, false, nil
}

func (f *fakeStore) lookup(s, id string) (*item, error) {
	sp := f.spaces[s]
	if sp == nil || sp[id] == nil {
		return nil, storage.ErrNotFound
	}
	return sp[id], nil
}

func (f *fakeStore) Head(_ context.Context, s, id string) (*storage.Info, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	it, err := f.lookup(s, id)
	if err != nil {
		return nil, err
	}
	in := it.info
	in.Properties = maps.Clone(in.Properties)
	return &in, nil
}

func (f *fakeStore) Get(ctx context.Context, s, id string) (io.ReadCloser, *storage.Info, error) {
	info, err := f.Head(ctx, s, id)
	if err != nil {
		return nil, nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return io.NopCloser(bytes.NewReader(f.spaces[s][id].data)), info, nil
}

func (f *fakeStore) Put(_ context.Context, s, id string, r io.Reader, o storage.PutOptions) (*storage.Info, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	sum := md5.Sum(b)
	h := hex.EncodeToString(sum[:])
	if o.Checksum != "" && o.Checksum != h {
		return nil, storage.ErrChecksumMismatch
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.spaces[s] == nil {
		return nil, storage.ErrNotFound
	}
	mt := o.MimeType
	if mt == "" {
		mt = "application/octet-stream"
	}
	it := &item{data: b, info: storage.Info{ContentID: id, Checksum: h, ProviderChecksum: "md5:" + h, Size: int64(len(b)),
		MimeType: mt, Modified: time.Now(), Properties: maps.Clone(o.Properties)}}
	f.spaces[s][id] = it
	in := it.info
	return &in, nil
}

func (f *fakeStore) SetProperties(_ context.Context, s, id string, p map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	it, err := f.lookup(s, id)
	if err != nil {
		return err
	}
	it.info.Properties = maps.Clone(p)
	return nil
}

func (f *fakeStore) Delete(_ context.Context, s, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.spaces[s] != nil {
		delete(f.spaces[s], id)
	}
	return nil
}
