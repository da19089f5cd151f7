// Package audited is the storage decorator that records every write (the
// DuraCloud AuditStorageProvider; docs/ARCHITECTURE.md, Stores and storage
// providers): after each successful write to the wrapped provider it puts one
// AUDIT task on the audit queue, which the audit processor turns into an
// audit log entry, a content index update and high-priority duplication
// tasks. Reads emit nothing. A writer copying from another store names it
// (Config.SourceStoreID) on its content writes' tasks.
//
// A write that succeeded but whose AUDIT task could not be queued is
// reported with an error wrapping ErrNotAudited (the write is not undone;
// the next duplication sweep and bit check still find the change), so the
// event is never dropped silently.
package audited

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
)

// KeyRestoredVersion names, in the AUDIT task of a restore, the version
// restored (the audit log records the restore as COPY_CONTENT whose
// source is the item itself).
const KeyRestoredVersion = "restored-version"

// ErrNotAudited reports that a write succeeded but its AUDIT task was not
// queued.
var ErrNotAudited = errors.New("audited: write done but AUDIT task not queued")

// Config describes the store being wrapped and who writes.
type Config struct {
	Account string `validate:"required"`
	StoreID string `validate:"required"`
	// StoreKind is written as store-type (default: the provider's Kind()).
	StoreKind storage.Kind
	// UserID is written as user-id (may be empty).
	UserID string
	// SourceStoreID, when set, is written as source-store-id on the
	// ADD_CONTENT and COPY_CONTENT of Put, Copy and ServerSideCopy: the
	// store the writer read the content from (a duplication's source, a
	// repair's good copy). The writer's own knowledge; the audit
	// processor takes it as a claim.
	SourceStoreID string
	// Format of the AUDIT message bodies (default task.FormatJSON; set
	// task.FormatProperties to feed DuraCloud's Java workers).
	Format task.Format
	// Clock gives date-time (default the system clock).
	Clock clock.Clock
}

// WithDefaults returns c with defaults filled in from the provider p.
func (c Config) WithDefaults(p storage.Provider) Config {
	if c.StoreKind == "" && p != nil {
		c.StoreKind = p.Kind()
	}
	c.Clock = clock.Or(c.Clock)
	return c
}

func (c Config) validate() error {
	p := validate.Struct("audited: Config", c)
	p.Check(c.Format == task.FormatJSON || c.Format == task.FormatProperties, "Format", c.Format, "be JSON or properties")
	return p.Err()
}

// Provider wraps a storage.Provider and audits its writes. It is a
// storage.Provider itself; safe for concurrent use as the wrapped provider
// and queue are.
type Provider struct {
	inner storage.Provider
	q     queue.Queue
	cfg   Config
}

var (
	_ storage.Provider  = (*Provider)(nil)
	_ storage.Recoverer = (*Provider)(nil)
)

// New returns p wrapped so that every successful write puts an AUDIT task
// on q.
func New(p storage.Provider, q queue.Queue, cfg Config) (*Provider, error) {
	if p == nil || q == nil {
		return nil, errors.New("audited: provider and queue are required")
	}
	cfg = cfg.WithDefaults(p)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Provider{inner: p, q: q, cfg: cfg}, nil
}

// Unwrap returns the wrapped provider (storage.Unwrapper), so a copy from
// this store to another can still be server-side. Writes made to the
// unwrapped provider are not audited.
func (p *Provider) Unwrap() storage.Provider { return p.inner }

// Kind implements storage.Provider.
func (p *Provider) Kind() storage.Kind { return p.inner.Kind() }

// ListSpaces implements storage.Provider (not audited: a read).
func (p *Provider) ListSpaces(ctx context.Context) ([]string, error) {
	return p.inner.ListSpaces(ctx)
}

// SpaceACLs implements storage.Provider (not audited: a read).
func (p *Provider) SpaceACLs(ctx context.Context, space string) (map[string]string, error) {
	return p.inner.SpaceACLs(ctx, space)
}

// ListContent implements storage.Provider (not audited: a read).
func (p *Provider) ListContent(ctx context.Context, space, after string, limit int) ([]string, bool, error) {
	return p.inner.ListContent(ctx, space, after, limit)
}

// Head implements storage.Provider (not audited: a read).
func (p *Provider) Head(ctx context.Context, space, contentID string) (*storage.Info, error) {
	return p.inner.Head(ctx, space, contentID)
}

// Get implements storage.Provider (not audited: a read).
func (p *Provider) Get(ctx context.Context, space, contentID string) (io.ReadCloser, *storage.Info, error) {
	return p.inner.Get(ctx, space, contentID)
}

// CreateSpace implements storage.Provider and emits CREATE_SPACE — only
// when this call created the space, if the store can tell
// (storage.SpaceCreator): however many workers create one space, its
// creation is audited once.
func (p *Provider) CreateSpace(ctx context.Context, space string) error {
	_, err := p.CreateSpaceIfAbsent(ctx, space)
	return err
}

var _ storage.SpaceCreator = (*Provider)(nil)

// CreateSpaceIfAbsent implements storage.SpaceCreator. Over a store that
// cannot tell whether it created the space, created is always true (and
// CREATE_SPACE always emitted), as before.
func (p *Provider) CreateSpaceIfAbsent(ctx context.Context, space string) (bool, error) {
	created := true
	var err error
	if sc, ok := p.inner.(storage.SpaceCreator); ok {
		created, err = sc.CreateSpaceIfAbsent(ctx, space)
	} else {
		err = p.inner.CreateSpace(ctx, space)
	}
	if err != nil || !created {
		return false, err
	}
	return true, p.emit(ctx, p.event(task.ActionCreateSpace, space, ""))
}

// DeleteSpace implements storage.Provider and emits DELETE_SPACE.
func (p *Provider) DeleteSpace(ctx context.Context, space string) error {
	if err := p.inner.DeleteSpace(ctx, space); err != nil {
		return err
	}
	return p.emit(ctx, p.event(task.ActionDeleteSpace, space, ""))
}

// SetSpaceACLs implements storage.Provider and emits SET_SPACE_ACLS with
// the new ACLs.
func (p *Provider) SetSpaceACLs(ctx context.Context, space string, acls map[string]string) error {
	if err := p.inner.SetSpaceACLs(ctx, space, acls); err != nil {
		return err
	}
	e := p.event(task.ActionSetSpaceACLs, space, "")
	if acls == nil {
		acls = map[string]string{}
	}
	e.Props[task.KeySpaceACLs] = jsonObject(acls)
	return p.emit(ctx, e)
}

// Put implements storage.Provider and emits ADD_CONTENT with the stored
// item's checksum, size, mimetype and properties. When the write succeeded
// but the event was not queued, the Info is returned with an error wrapping
// ErrNotAudited.
func (p *Provider) Put(ctx context.Context, space, contentID string, r io.Reader, opts storage.PutOptions) (*storage.Info, error) {
	info, err := p.inner.Put(ctx, space, contentID, r, opts)
	if err != nil {
		return nil, err
	}
	e := p.event(task.ActionAddContent, space, contentID)
	withInfo(e, info)
	p.withSource(e)
	return info, p.emit(ctx, e)
}

// SetProperties implements storage.Provider and emits
// SET_CONTENT_PROPERTIES. The item's checksum, size and mimetype are read
// after the write; if that read fails the event still carries the new
// properties.
func (p *Provider) SetProperties(ctx context.Context, space, contentID string, props map[string]string) error {
	if err := p.inner.SetProperties(ctx, space, contentID, props); err != nil {
		return err
	}
	e := p.event(task.ActionSetContentProperties, space, contentID)
	if info, err := p.inner.Head(ctx, space, contentID); err == nil {
		withInfo(e, info)
	}
	if props == nil {
		props = map[string]string{}
	}
	e.Props[task.KeyContentProperties] = jsonObject(props)
	return p.emit(ctx, e)
}

// Delete implements storage.Provider and emits DELETE_CONTENT carrying the
// checksum, size, mimetype and properties the item had before the delete.
// Deleting an item that is already gone is success and emits nothing:
// nothing changed.
func (p *Provider) Delete(ctx context.Context, space, contentID string) error {
	before, err := p.inner.Head(ctx, space, contentID)
	if errors.Is(err, storage.ErrNotFound) {
		return p.inner.Delete(ctx, space, contentID)
	}
	if err != nil {
		return fmt.Errorf("audited: delete %s/%s: read the item before deleting: %w", space, contentID, err)
	}
	if err := p.inner.Delete(ctx, space, contentID); err != nil {
		return err
	}
	e := p.event(task.ActionDeleteContent, space, contentID)
	withInfo(e, before)
	return p.emit(ctx, e)
}

// recoverer returns the wrapped provider as a storage.Recoverer.
func (p *Provider) recoverer() (storage.Recoverer, error) {
	r, ok := p.inner.(storage.Recoverer)
	if !ok {
		return nil, fmt.Errorf("audited: %T keeps no versions: %w", p.inner, errors.ErrUnsupported)
	}
	return r, nil
}

// Versions implements storage.Recoverer (not audited: a read). It fails
// with errors.ErrUnsupported when the wrapped provider keeps no versions.
func (p *Provider) Versions(ctx context.Context, space, contentID string) ([]storage.Version, error) {
	r, err := p.recoverer()
	if err != nil {
		return nil, err
	}
	return r.Versions(ctx, space, contentID)
}

// Restore implements storage.Recoverer and emits COPY_CONTENT whose source
// is the item itself, with the restored version's ID (the newest's when
// versionID is "") under KeyRestoredVersion; duplication then copies the
// restored content to the other stores. It fails with errors.ErrUnsupported when the wrapped
// provider keeps no versions.
func (p *Provider) Restore(ctx context.Context, space, contentID, versionID string) (*storage.Info, error) {
	r, err := p.recoverer()
	if err != nil {
		return nil, err
	}
	if versionID == "" { // name the newest in the audit trail
		vs, err := r.Versions(ctx, space, contentID)
		if err != nil {
			return nil, err
		}
		if len(vs) == 0 {
			return nil, fmt.Errorf("audited: restore %s/%s: %w: no recoverable version", space, storage.QuoteID(contentID), storage.ErrNotFound)
		}
		versionID = vs[0].ID
	}
	info, err := r.Restore(ctx, space, contentID, versionID)
	if err != nil {
		return nil, err
	}
	e := p.copyEvent(info, space, contentID, space, contentID)
	e.Props[KeyRestoredVersion] = versionID
	return info, p.emit(ctx, e)
}

// serverSideCopier is storage.ServerSideCopier, restated so this package
// needs only its method.
type serverSideCopier interface {
	ServerSideCopy(ctx context.Context, src storage.Provider, srcSpace, srcID, dstSpace, dstID string) (*storage.Info, bool, error)
}

// ServerSideCopy implements storage.ServerSideCopier by delegating to the
// wrapped provider; a copy it made is audited as COPY_CONTENT. It reports
// ok == false, doing nothing, when the wrapped provider cannot copy from
// src that way.
func (p *Provider) ServerSideCopy(ctx context.Context, src storage.Provider, srcSpace, srcID, dstSpace, dstID string) (*storage.Info, bool, error) {
	c, ok := p.inner.(serverSideCopier)
	if !ok {
		return nil, false, nil
	}
	info, done, err := c.ServerSideCopy(ctx, unwrap(src), srcSpace, srcID, dstSpace, dstID)
	if err != nil || !done {
		return info, done, err
	}
	return info, true, p.emit(ctx, p.withSource(p.copyEvent(info, srcSpace, srcID, dstSpace, dstID)))
}

var _ storage.SeenCopier = (*Provider)(nil)

// ServerSideCopySeen implements storage.SeenCopier as ServerSideCopy does,
// passing what the caller read of the items to a wrapped SeenCopier (a
// wrapped ServerSideCopier that takes none reads them itself).
func (p *Provider) ServerSideCopySeen(ctx context.Context, src storage.Provider, srcSpace, srcID, dstSpace, dstID string, seen storage.Seen) (*storage.Info, bool, error) {
	c, ok := p.inner.(storage.SeenCopier)
	if !ok {
		return p.ServerSideCopy(ctx, src, srcSpace, srcID, dstSpace, dstID)
	}
	info, done, err := c.ServerSideCopySeen(ctx, unwrap(src), srcSpace, srcID, dstSpace, dstID, seen)
	if err != nil || !done {
		return info, done, err
	}
	return info, true, p.emit(ctx, p.withSource(p.copyEvent(info, srcSpace, srcID, dstSpace, dstID)))
}

// Copy copies srcSpace/srcID of src (nil: this store) to dstSpace/dstID of
// this store and emits COPY_CONTENT with the source's space and content
// id. The copy is server-side when the wrapped provider can do it from src
// (storage.ServerSideCopier); otherwise the bytes stream from src.Get to
// Put, which verifies the source's MD5.
func (p *Provider) Copy(ctx context.Context, src storage.Provider, srcSpace, srcID, dstSpace, dstID string) (*storage.Info, error) {
	if src == nil {
		src = p.inner
	}
	src = unwrap(src)
	if c, ok := p.inner.(serverSideCopier); ok {
		info, done, err := c.ServerSideCopy(ctx, src, srcSpace, srcID, dstSpace, dstID)
		if err != nil {
			return nil, fmt.Errorf("audited: copy %s/%s to %s/%s: %w", srcSpace, srcID, dstSpace, dstID, err)
		}
		if done {
			return info, p.emit(ctx, p.withSource(p.copyEvent(info, srcSpace, srcID, dstSpace, dstID)))
		}
	}
	rc, sinfo, err := src.Get(ctx, srcSpace, srcID)
	if err != nil {
		return nil, fmt.Errorf("audited: copy %s/%s: %w", srcSpace, srcID, err)
	}
	defer rc.Close()
	info, err := p.inner.Put(ctx, dstSpace, dstID, rc, storage.PutOptions{
		Size:       sinfo.Size,
		Checksum:   sinfo.Checksum,
		MimeType:   sinfo.MimeType,
		Properties: storage.UserProperties(sinfo.Properties),
	})
	if err != nil {
		return nil, fmt.Errorf("audited: copy %s/%s to %s/%s: %w", srcSpace, srcID, dstSpace, dstID, err)
	}
	return info, p.emit(ctx, p.withSource(p.copyEvent(info, srcSpace, srcID, dstSpace, dstID)))
}

// withSource adds the configured source store to a content write's event.
func (p *Provider) withSource(e *task.Task) *task.Task {
	if p.cfg.SourceStoreID != "" {
		e.Props[task.KeySourceStoreID] = p.cfg.SourceStoreID
	}
	return e
}

func (p *Provider) copyEvent(info *storage.Info, srcSpace, srcID, dstSpace, dstID string) *task.Task {
	e := p.event(task.ActionCopyContent, dstSpace, dstID)
	withInfo(e, info)
	e.Props[task.KeySourceSpaceID] = srcSpace
	e.Props[task.KeySourceContentID] = srcID
	return e
}

func unwrap(p storage.Provider) storage.Provider {
	for {
		u, ok := p.(interface{ Unwrap() storage.Provider })
		if !ok {
			return p
		}
		p = u.Unwrap()
	}
}

// event returns an AUDIT task with the properties every action carries.
func (p *Provider) event(a task.Action, space, contentID string) *task.Task {
	props := map[string]string{
		task.KeyAccount:   p.cfg.Account,
		task.KeyStoreID:   p.cfg.StoreID,
		task.KeySpaceID:   space,
		task.KeyAction:    string(a),
		task.KeyDateTime:  strconv.FormatInt(p.cfg.Clock.Now().UnixMilli(), 10),
		task.KeyStoreType: string(p.cfg.StoreKind),
	}
	if contentID != "" {
		props[task.KeyContentID] = contentID
	}
	if p.cfg.UserID != "" {
		props[task.KeyUserID] = p.cfg.UserID
	}
	return task.New(task.TypeAudit, props)
}

// withInfo adds an item's checksum, mimetype, size and properties.
func withInfo(e *task.Task, info *storage.Info) {
	if info == nil {
		return
	}
	if info.Checksum != "" {
		e.Props[task.KeyContentChecksum] = info.Checksum
	}
	if info.MimeType != "" {
		e.Props[task.KeyContentMimetype] = info.MimeType
	}
	if info.Size >= 0 {
		e.Props[task.KeyContentSize] = strconv.FormatInt(info.Size, 10)
	}
	props := info.Properties
	if props == nil {
		props = map[string]string{}
	}
	e.Props[task.KeyContentProperties] = jsonObject(props)
}

// emit puts e on the audit queue. The write has happened: a failure here is
// reported as ErrNotAudited with what was written, never dropped.
func (p *Provider) emit(ctx context.Context, e *task.Task) error {
	what := e.Props[task.KeyAction] + " " + e.Props[task.KeySpaceID]
	if id := e.Props[task.KeyContentID]; id != "" {
		what += "/" + id
	}
	body, err := task.Encode(e, p.cfg.Format)
	if err == nil {
		err = p.q.Send(ctx, queue.SendEntry{Body: body, Group: queue.GroupFor(e.Get(task.KeyAccount))})
	}
	if err != nil {
		return fmt.Errorf("%w: %s on store %s/%s succeeded; sending to queue %s failed: %w",
			ErrNotAudited, what, p.cfg.Account, p.cfg.StoreID, p.q.Name(), err)
	}
	return nil
}

// jsonObject writes m as a compact JSON object with sorted keys.
func jsonObject(m map[string]string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(m) // a map of strings always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
