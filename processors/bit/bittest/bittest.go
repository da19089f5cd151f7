// Package bittest is a test fixture for the bit-integrity processors: a
// two-store account on filesystem stores with memory content index, audit
// log, bit log and queues, and helpers to inject faults (a sour byte, a
// wrong provider checksum, a missing item, CRC64NVME or failing providers).
package bittest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/crc64"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/auditlog/memauditlog"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/bit"

	"github.com/millfleet/mill/internal/testkit/slogtest"
	"github.com/millfleet/mill/pkg/bitlog/membitlog"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
)

// T0 is the time of the fixture's index rows and audit entries; the fake
// clock starts an hour later.
var T0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// The item every helper works on.
const (
	Account = "acme"
	Space   = "photos"
	Item    = "doc"
	RunID   = "run1"
)

// Good is the item's healthy content; GoodMD5 its MD5; OldMD5 the MD5 of
// another version.
var (
	Good    = []byte("the quick brown fox")
	GoodMD5 = MD5Hex(Good)
	OldMD5  = MD5Hex([]byte("an older version"))
	// SourMD5 is the MD5 of Good after Sour flipped its byte.
	SourMD5 = MD5Hex(sour(Good))
)

func sour(b []byte) []byte {
	b = bytes.Clone(b)
	b[3] ^= 0x20
	return b
}

// MD5Hex is the MD5 of b in hex.
func MD5Hex(b []byte) string {
	s, _, _ := storage.MD5Hex(bytes.NewReader(b))
	return s
}

// Env is a two-store account (fs stores 1 and 2) with memory index, audit
// log, bit log and queues.
type Env struct {
	T        testing.TB
	Reg      *stores.Registry
	Opener   *stores.Opener
	Index    *memcontentindex.Index
	Audit    *memauditlog.Log
	BitLog   *membitlog.Log
	AuditQ   *memqueue.Queue
	ErrQ     *memqueue.Queue
	Clock    *clock.Fake
	Roots    map[string]string
	mu       sync.Mutex
	wrappers map[string]func(storage.Provider) storage.Provider
}

// New returns an empty Env; its directories are removed when the test ends.
func New(t testing.TB) *Env {
	t.Helper()
	e := &Env{T: t, Index: memcontentindex.New(), Audit: memauditlog.New(),
		Clock: clock.NewFake(T0.Add(time.Hour)), Roots: map[string]string{},
		wrappers: map[string]func(storage.Provider) storage.Provider{}}
	e.BitLog = membitlog.New(e.Clock)
	e.AuditQ = memqueue.New("audit", memqueue.Config{Clock: e.Clock})
	e.ErrQ = memqueue.New("bit-error", memqueue.Config{Clock: e.Clock})
	for _, id := range []string{"1", "2"} {
		e.Roots[id] = t.TempDir()
	}
	e.Reg = &stores.Registry{Accounts: []stores.Account{{ID: Account, Status: stores.StatusActive, Stores: []stores.Store{
		{ID: "1", Primary: true, Kind: storage.KindFS, Root: e.Roots["1"]},
		{ID: "2", Kind: storage.KindFS, Root: e.Roots["2"]},
	}}}}
	e.Opener = stores.NewOpener(e.Reg, stores.OpenerConfig{FS: func(ctx context.Context, s stores.Store) (storage.Provider, error) {
		p, err := fsstore.New(s.Root)
		if err != nil {
			return nil, err
		}
		return &switchable{Provider: p, env: e, id: s.ID, inner: p}, nil
	}})
	return e
}

// switchable lets a test wrap a store's provider after it was opened.
type switchable struct {
	storage.Provider
	env   *Env
	id    string
	inner storage.Provider
}

func (s *switchable) cur() storage.Provider {
	s.env.mu.Lock()
	defer s.env.mu.Unlock()
	if w := s.env.wrappers[s.id]; w != nil {
		return w(s.inner)
	}
	return s.inner
}

func (s *switchable) Kind() storage.Kind { return s.inner.Kind() }
func (s *switchable) Head(ctx context.Context, sp, id string) (*storage.Info, error) {
	return s.cur().Head(ctx, sp, id)
}
func (s *switchable) Get(ctx context.Context, sp, id string) (io.ReadCloser, *storage.Info, error) {
	return s.cur().Get(ctx, sp, id)
}
func (s *switchable) Put(ctx context.Context, sp, id string, r io.Reader, o storage.PutOptions) (*storage.Info, error) {
	return s.cur().Put(ctx, sp, id, r, o)
}
func (s *switchable) CreateSpace(ctx context.Context, sp string) error {
	return s.cur().CreateSpace(ctx, sp)
}
func (s *switchable) Delete(ctx context.Context, sp, id string) error {
	return s.cur().Delete(ctx, sp, id)
}
func (s *switchable) DeleteSpace(ctx context.Context, sp string) error {
	return s.cur().DeleteSpace(ctx, sp)
}
func (s *switchable) ListContent(ctx context.Context, sp, after string, limit int) ([]string, bool, error) {
	return s.cur().ListContent(ctx, sp, after, limit)
}

// Logger returns a logger writing to the test's log.
func (e *Env) Logger() *slog.Logger {
	return slogtest.New(e.T, slog.LevelInfo)
}

// Wrap replaces store id's provider by w(provider) from now on.
func (e *Env) Wrap(id string, w func(storage.Provider) storage.Provider) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.wrappers[id] = w
}

// Provider opens store id.
func (e *Env) Provider(id string) storage.Provider {
	e.T.Helper()
	p, err := e.Opener.Open(context.Background(), Account, id)
	if err != nil {
		e.T.Fatal(err)
	}
	return p
}

// Put writes content to a store, creating the space.
func (e *Env) Put(storeID string, content []byte) {
	e.T.Helper()
	ctx := context.Background()
	p := e.Provider(storeID)
	if err := p.CreateSpace(ctx, Space); err != nil {
		e.T.Fatal(err)
	}
	if _, err := p.Put(ctx, Space, Item, bytes.NewReader(content), storage.PutOptions{Size: int64(len(content)),
		MimeType: "text/plain", Properties: map[string]string{"creator": "bob"}}); err != nil {
		e.T.Fatal(err)
	}
}

// SetIndex writes the index row of the item in store 1 ("" writes none).
func (e *Env) SetIndex(sum string) {
	e.T.Helper()
	if sum == "" {
		return
	}
	n := int64(len(Good))
	if _, err := e.Index.Upsert(context.Background(), contentindex.Entry{Item: CIItem(), Checksum: sum, Size: &n,
		MimeType: "text/plain", Properties: map[string]string{"creator": "bob"}, Modified: T0}); err != nil {
		e.T.Fatal(err)
	}
}

// CIItem is the item in store 1 as the content index names it.
func CIItem() contentindex.Item {
	return contentindex.Item{Account: Account, StoreID: "1", SpaceID: Space, ContentID: Item}
}

// SetAudit writes an audit entry of the item in store 1 ("" writes none).
func (e *Env) SetAudit(action task.Action, sum string, props map[string]string) {
	e.T.Helper()
	if sum == "" && action != task.ActionDeleteContent {
		return
	}
	if _, err := e.Audit.Put(context.Background(), auditlog.Entry{Account: Account, StoreID: "1", SpaceID: Space,
		ContentID: Item, Action: action, Time: T0, Checksum: sum, Properties: props}); err != nil {
		e.T.Fatal(err)
	}
}

// AddAudit writes one more audit entry of the item in store 1, after T0
// (sum may be empty: DuraStore writes SET_CONTENT_PROPERTIES entries
// without a checksum).
func (e *Env) AddAudit(after time.Duration, action task.Action, sum string, props map[string]string) {
	e.T.Helper()
	if _, err := e.Audit.Put(context.Background(), auditlog.Entry{Account: Account, StoreID: "1", SpaceID: Space,
		ContentID: Item, Action: action, Time: T0.Add(after), Checksum: sum, Properties: props}); err != nil {
		e.T.Fatal(err)
	}
}

// sidecar edits store id's sidecar of the item.
func (e *Env) sidecar(id string, edit func(m map[string]any)) {
	e.T.Helper()
	path := filepath.Join(e.Roots[id], Space, Item+".m")
	b, err := os.ReadFile(path)
	if err != nil {
		e.T.Fatal(err)
	}
	m := map[string]any{}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // numbers as written (a float64 would round an inode)
	if err := d.Decode(&m); err != nil {
		e.T.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		e.T.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		e.T.Fatal(err)
	}
}

// Sour flips one byte of store id's copy in place, as bit rot does: the
// file, its size, its modification time and its recorded MD5 stay, so
// only reading the bytes can tell.
func (e *Env) Sour(id string) {
	e.T.Helper()
	e.sidecar(id, func(m map[string]any) {
		path := filepath.Join(e.Roots[id], Space, m["blob"].(string))
		fi, err := os.Stat(path)
		if err != nil {
			e.T.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			e.T.Fatal(err)
		}
		if err := os.WriteFile(path, sour(b), 0o644); err != nil {
			e.T.Fatal(err)
		}
		if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
			e.T.Fatal(err)
		}
	})
}

// Replace swaps store id's blob for a new file holding content, as
// another tool writing the store would, leaving the sidecar and the MD5
// it records.
func (e *Env) Replace(id string, content []byte) {
	e.T.Helper()
	e.sidecar(id, func(m map[string]any) {
		path := filepath.Join(e.Roots[id], Space, m["blob"].(string))
		if err := os.WriteFile(path+".new", content, 0o644); err != nil {
			e.T.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			e.T.Fatal(err)
		}
	})
}

// BreakStorageChecksum changes the MD5 store id reports, leaving the bytes.
func (e *Env) BreakStorageChecksum(id, sum string) {
	e.T.Helper()
	e.sidecar(id, func(m map[string]any) { m["md5"] = sum })
}

// Remove deletes the item from store id.
func (e *Env) Remove(id string) {
	e.T.Helper()
	if err := e.Provider(id).Delete(context.Background(), Space, Item); err != nil {
		e.T.Fatal(err)
	}
}

// Processor returns a BIT processor on the fixture; mod adjusts its config.
func (e *Env) Processor(mod func(*bit.Config)) *bit.Processor {
	e.T.Helper()
	cfg := bit.Config{Stores: e.Opener, Index: e.Index, AuditLog: e.Audit, BitLog: e.BitLog,
		AuditQueue: e.AuditQ, BitErrorQueue: e.ErrQ, Common: bit.Common{Clock: e.Clock, Logger: e.Logger()}}
	if mod != nil {
		mod(&cfg)
	}
	p, err := bit.New(cfg)
	if err != nil {
		e.T.Fatal(err)
	}
	return p
}

// BitTask is the BIT task of the item in store 1 for RunID.
func BitTask(attempts int) *task.Task {
	return task.Bit{Account: Account, StoreID: "1", SpaceID: Space, ContentID: Item, RunID: RunID, Attempts: attempts}.Task()
}

// Row returns the bit log row of the item, or nil.
func (e *Env) Row() *bitlog.Row {
	e.T.Helper()
	rows, _, err := e.BitLog.Results(context.Background(), bitlog.Filter{RunID: RunID})
	if err != nil {
		e.T.Fatal(err)
	}
	switch len(rows) {
	case 0:
		return nil
	case 1:
		return &rows[0]
	}
	e.T.Fatalf("%d rows for one item", len(rows))
	return nil
}

func decodeAll(t testing.TB, q *memqueue.Queue) []*task.Task {
	t.Helper()
	var out []*task.Task
	for _, m := range q.Messages() {
		tk, err := task.Decode(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tk)
	}
	return out
}

// BitErrors returns the BIT_ERROR tasks sent.
func (e *Env) BitErrors() []task.BitError {
	e.T.Helper()
	var out []task.BitError
	for _, tk := range decodeAll(e.T, e.ErrQ) {
		be, err := task.BitErrorFrom(tk)
		if err != nil {
			e.T.Fatal(err)
		}
		out = append(out, be)
	}
	return out
}

// Audits returns the AUDIT tasks sent.
func (e *Env) Audits() []task.Audit {
	e.T.Helper()
	var out []task.Audit
	for _, tk := range decodeAll(e.T, e.AuditQ) {
		a, err := task.AuditFrom(tk)
		if err != nil {
			e.T.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// CRCProvider reports a CRC64NVME provider checksum (an S3 multipart
// upload), computed from the bytes, or a wrong one.
type CRCProvider struct {
	storage.Provider
	Wrong bool
}

func (c CRCProvider) fix(ctx context.Context, sp, id string, info *storage.Info) {
	rc, _, err := c.Provider.Get(ctx, sp, id)
	if err != nil {
		return
	}
	defer rc.Close()
	h := crc64.New(storage.CRC64NVMETable)
	_, _ = io.Copy(h, rc)
	sum := h.Sum64()
	if c.Wrong {
		sum++
	}
	info.ProviderChecksum = storage.ProviderCRC64NVME(sum)
}

func (c CRCProvider) Head(ctx context.Context, sp, id string) (*storage.Info, error) {
	info, err := c.Provider.Head(ctx, sp, id)
	if err == nil {
		c.fix(ctx, sp, id, info)
	}
	return info, err
}

func (c CRCProvider) Get(ctx context.Context, sp, id string) (io.ReadCloser, *storage.Info, error) {
	rc, info, err := c.Provider.Get(ctx, sp, id)
	if err == nil {
		c.fix(ctx, sp, id, info)
	}
	return rc, info, err
}

// Failing fails every read with ErrTransient.
type Failing struct{ storage.Provider }

// ErrTransient is what Failing returns.
var ErrTransient = errors.New("connection reset")

func (Failing) Head(context.Context, string, string) (*storage.Info, error) { return nil, ErrTransient }
func (Failing) Get(context.Context, string, string) (io.ReadCloser, *storage.Info, error) {
	return nil, nil, ErrTransient
}
