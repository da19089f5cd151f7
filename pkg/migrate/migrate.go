package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/pkg/storage"
)

// UserID is the user of the migration's writes in the audit log (the
// AUDIT tasks of the audited destination): package derive makes each of
// its content writes a replication event.
const UserID = "mill-migrate"

// DefaultWorkers is how many items are migrated at once.
const DefaultWorkers = 8

// pageSize is how many content IDs one listing asks for.
const pageSize = 1000

// Config is one migration from a DuraCloud store to a Mill store. The
// stores are the caller's (from the store registry and the command line):
// nothing the migration reads names a store.
type Config struct {
	// Source is the DuraCloud store (an s3 store with the duracloud
	// layout). The migration only reads it.
	Source storage.Provider
	// Dest is the Mill store, normally wrapped in the audited decorator
	// naming the source store and UserID, so every write is recorded.
	Dest storage.Provider
	// Spaces are the spaces to migrate, in order; empty: every space of
	// the source.
	Spaces []string
	// Workers is how many items are migrated at once (DefaultWorkers).
	Workers int
	// Transfer tunes the reads and writes of large items.
	Transfer storage.Transfer
}

// defaultConfig holds the values Migrate gives a Config's zero or negative
// fields.
var defaultConfig = Config{Workers: DefaultWorkers}

// Item is the record of one item.
type Item struct {
	Space     string  `json:"space"`
	ContentID string  `json:"contentId"`
	Outcome   Outcome `json:"outcome"`
	Size      int64   `json:"size"`
	// MD5 is DuraCloud's recorded MD5.
	MD5 string `json:"md5,omitempty"`
	// CRC64NVME is the CRC-64/NVME (base64) of the bytes read at the
	// source and read back at the destination (copied items).
	CRC64NVME string `json:"crc64nvme,omitempty"`
	Detail    string `json:"detail,omitempty"`
}

// Migrate migrates the spaces of c, space by space, calling record once
// per item (from several goroutines, never at once). It returns an error
// only when a space cannot be listed or made at the destination; each
// item's failure is its record's.
func Migrate(ctx context.Context, c Config, record func(Item)) error {
	if c.Source == nil || c.Dest == nil {
		return errors.New("migrate: a source and a destination store are required")
	}
	defaults.FillNonPositive(&c, defaultConfig)
	spaces := c.Spaces
	if len(spaces) == 0 {
		var err error
		if spaces, err = c.Source.ListSpaces(ctx); err != nil {
			return fmt.Errorf("migrate: list the source's spaces: %w", err)
		}
	}
	var mu sync.Mutex
	rec := func(it Item) {
		mu.Lock()
		defer mu.Unlock()
		record(it)
	}
	for _, space := range spaces {
		if err := storage.ValidateSpaceID(space); err != nil {
			return fmt.Errorf("migrate: space %q: %w", space, err)
		}
		if err := c.space(ctx, space, rec); err != nil {
			return err
		}
	}
	return nil
}

// space migrates one space: makes it at the destination (with the
// source's ACLs) when it is not there, then its items.
func (c Config) space(ctx context.Context, space string, record func(Item)) error {
	if err := c.makeSpace(ctx, space); err != nil {
		return err
	}
	ids := make(chan string)
	var wg sync.WaitGroup
	for range c.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				record(c.item(ctx, space, id))
			}
		}()
	}
	err := c.list(ctx, space, ids)
	close(ids)
	wg.Wait()
	return err
}

func (c Config) list(ctx context.Context, space string, ids chan<- string) error {
	after := ""
	for {
		page, more, err := c.Source.ListContent(ctx, space, after, pageSize)
		if err != nil {
			return fmt.Errorf("migrate: list space %s: %w", space, err)
		}
		for _, id := range page {
			select {
			case ids <- id:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if !more || len(page) == 0 {
			return nil
		}
		after = page[len(page)-1]
	}
}

// makeSpace creates the space at the destination with the source's ACLs
// when the destination does not have it.
func (c Config) makeSpace(ctx context.Context, space string) error {
	if _, err := c.Dest.SpaceACLs(ctx, space); err == nil {
		return nil
	} else if !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("migrate: space %s at the destination: %w", space, err)
	}
	acls, err := c.Source.SpaceACLs(ctx, space)
	if err != nil {
		return fmt.Errorf("migrate: space %s at the source: %w", space, err)
	}
	if err := c.Dest.CreateSpace(ctx, space); err != nil {
		return fmt.Errorf("migrate: create space %s at the destination: %w", space, err)
	}
	if len(acls) > 0 {
		if err := c.Dest.SetSpaceACLs(ctx, space, acls); err != nil {
			return fmt.Errorf("migrate: space %s: copy its ACLs: %w", space, err)
		}
	}
	return nil
}

// item migrates one item.
func (c Config) item(ctx context.Context, space, id string) Item {
	it := Item{Space: space, ContentID: id}
	fail := func(o Outcome, format string, args ...any) Item {
		it.Outcome, it.Detail = o, fmt.Sprintf(format, args...)
		return it
	}
	if err := storage.ValidateContentID(id); err != nil {
		return fail(Refused, "%v", err)
	}
	src, err := c.Source.Head(ctx, space, id)
	if err != nil {
		return fail(Failed, "head at the source: %v", err)
	}
	it.Size = src.Size
	dst, err := c.Dest.Head(ctx, space, id)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		dst = nil
	case errors.Is(err, storage.ErrInvalidID):
		return fail(Refused, "the destination cannot hold this ID: %v", err)
	case err != nil:
		return fail(Failed, "head at the destination: %v", err)
	}
	act := Plan(src, dst)
	it.MD5 = act.MD5
	if act.Outcome != Copied {
		return fail(act.Outcome, "%s", act.Detail)
	}
	return c.copy(ctx, it, src)
}

// copy streams the item from the source to the destination, hashing the
// bytes read (MD5 and CRC-64/NVME) while the destination verifies
// DuraCloud's MD5 as it writes, then reads the copy back and verifies it.
func (c Config) copy(ctx context.Context, it Item, src *storage.Info) Item {
	fail := func(o Outcome, format string, args ...any) Item {
		it.Outcome, it.Detail = o, fmt.Sprintf(format, args...)
		return it
	}
	rc, info, err := storage.Open(ctx, c.Source, it.Space, it.ContentID, c.Transfer)
	if err != nil {
		return fail(Failed, "read at the source: %v", err)
	}
	defer rc.Close()
	if info.Revision != src.Revision || info.Size != src.Size {
		return fail(Failed, "changed at the source while being migrated")
	}
	// The source's bytes in order (parallel ranged reads of a large
	// item, storage.ReadAll), hashed as they go to the destination.
	read := storage.NewSums()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := storage.ReadAll(ctx, rc, src.Size, c.Transfer, io.MultiWriter(read, pw))
		pw.CloseWithError(err)
		done <- err
	}()
	_, err = c.Dest.Put(ctx, it.Space, it.ContentID, pr, storage.PutOptions{
		Size: src.Size, Checksum: it.MD5, MimeType: src.MimeType,
		Properties: storage.UserProperties(src.Properties), Transfer: c.Transfer,
	})
	pr.CloseWithError(errPutDone)
	readErr := <-done
	if errors.Is(err, storage.ErrChecksumMismatch) {
		// The destination refused the bytes: tell a source that went
		// sour from a transfer fault by the MD5 of all its bytes.
		if readErr != nil || read.Len() != src.Size {
			read = storage.NewSums()
			if rerr := c.readInto(ctx, c.Source, it, read); rerr != nil {
				return fail(Failed, "write at the destination: %v; read at the source: %v", err, rerr)
			}
		}
		if read.Len() == src.Size && read.MD5() != it.MD5 {
			return fail(Corrupt, "bytes read at the source: MD5 %s; DuraCloud recorded MD5 %s: not copied", read.MD5(), it.MD5)
		}
		return fail(Failed, "write at the destination: %v", err)
	}
	if refusedByDest(err) {
		return fail(Refused, "the destination refuses the item: %v", err)
	}
	if err != nil {
		return fail(Failed, "write at the destination: %v", err)
	}
	if readErr != nil && read.Len() != src.Size {
		return fail(Failed, "read at the source: %v", readErr)
	}
	back := storage.NewSums()
	binfo, err := c.readBack(ctx, it, back)
	if err != nil {
		return fail(Failed, "read back at the destination: %v", err)
	}
	o, detail := Verify(it.MD5, src.Size, read, binfo, back)
	it.CRC64NVME = storage.CRC64NVMEBase64(read.CRC64NVME())
	if o != Copied {
		// The copy is not what was read: remove it, so the next run copies
		// the item again rather than skipping it by the checksum its write
		// recorded.
		it.CRC64NVME = ""
		if err := c.Dest.Delete(ctx, it.Space, it.ContentID); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return fail(o, "%s; removing the copy: %v", detail, err)
		}
		return fail(o, "%s; the copy was removed", detail)
	}
	it.Outcome = Copied
	return it
}

// refusedByDest reports whether a write failed on what the item is (its
// ID, its properties), which a later run cannot change.
func refusedByDest(err error) bool {
	for _, e := range []error{storage.ErrInvalidID, storage.ErrInvalidProperty, storage.ErrPropertiesTooLarge} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// errPutDone ends a copy's source read when the destination's write
// returned.
var errPutDone = errors.New("migrate: the destination's write returned")

// readInto reads an item of p whole into w.
func (c Config) readInto(ctx context.Context, p storage.Provider, it Item, w io.Writer) error {
	_, err := c.read(ctx, p, it, w)
	return err
}

// readBack reads the item back from the destination provider itself (not
// through the audit wrapper) into w and returns its Info.
func (c Config) readBack(ctx context.Context, it Item, w io.Writer) (*storage.Info, error) {
	return c.read(ctx, storage.Unwrap(c.Dest), it, w)
}

func (c Config) read(ctx context.Context, p storage.Provider, it Item, w io.Writer) (*storage.Info, error) {
	rc, info, err := storage.Open(ctx, p, it.Space, it.ContentID, c.Transfer)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	_, err = storage.ReadAll(ctx, rc, info.Size, c.Transfer, w)
	return info, err
}

// Summary counts a migration's items per space and outcome.
type Summary struct {
	Started  time.Time                  `json:"started"`
	Finished time.Time                  `json:"finished"`
	Items    map[Outcome]int            `json:"items"`
	Bytes    map[Outcome]int64          `json:"bytes"`
	Spaces   map[string]map[Outcome]int `json:"spaces"`
	Problems []Item                     `json:"problems"`
}

// NewSummary returns an empty summary started at t.
func NewSummary(t time.Time) *Summary {
	return &Summary{Started: t, Items: map[Outcome]int{}, Bytes: map[Outcome]int64{}, Spaces: map[string]map[Outcome]int{}, Problems: []Item{}}
}

// Add counts one item; every item not copied or skipped is kept in full.
func (s *Summary) Add(it Item) {
	s.Items[it.Outcome]++
	s.Bytes[it.Outcome] += it.Size
	if s.Spaces[it.Space] == nil {
		s.Spaces[it.Space] = map[Outcome]int{}
	}
	s.Spaces[it.Space][it.Outcome]++
	if it.Outcome != Copied && it.Outcome != Skipped {
		s.Problems = append(s.Problems, it)
	}
}

// Clean reports whether every item was copied or skipped.
func (s *Summary) Clean() bool { return len(s.Problems) == 0 }

// spaceNames lists the summary's spaces in order.
func (s *Summary) spaceNames() []string {
	names := make([]string, 0, len(s.Spaces))
	for n := range s.Spaces {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
