package bit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// Observer gathers the four checksums of an item (see the package doc): the
// bit check, the bit-error processor's proof before a repair and the
// report's re-check of a missing item all look at an item through it.
// Safe for concurrent use.
type Observer struct {
	Stores   stores.RegistryOpener // required
	Index    contentindex.Index    // required
	AuditLog auditlog.Log          // required
	// ReadSettings are how content is read (the bit check's Config holds
	// its own and passes them on); a read that breaks mid-body is read on
	// from its hash (cutread.go).
	ReadSettings
	// HeadFirst: Head each item before reading it, and read none whose
	// bytes are archived (not restored): no GET of an archived object is
	// ever sent, at the cost of one HEAD per read. The bit-error and
	// report processors' looks use it (few items); so does a re-check.
	HeadFirst bool
	// AtRest, when set, is the bit producer's record of its at-rest jobs:
	// ObserveRun takes C of an archived item from the run's job there.
	AtRest bitlog.AtRestJobs
}

// ReadSettings are how an Observer reads an item's content.
type ReadSettings struct {
	// UnreadableKinds and UnreadableStores ("account/storeID") are stores
	// whose content is not read: C is N/A, only Head is called.
	UnreadableKinds  []storage.Kind
	UnreadableStores []string
	// Transfer: the ranged reads in flight and their size (zero: the
	// defaults, 4 of 8 MiB).
	Transfer storage.Transfer
	// Checkpoints, when set, makes the bit check's reads of items of at
	// least ResumeMinSize (default 256 MiB) resumable, saving progress
	// every CheckpointEvery bytes (default 1 GiB); see read.go.
	Checkpoints     blob.Store
	ResumeMinSize   int64
	CheckpointEvery int64
}

// Observation is what one look at an item saw.
type Observation struct {
	Sums      Checksums
	Info      *storage.Info       // the storage properties; nil when not in storage
	Index     *contentindex.Entry // the content index row (maybe a tombstone); nil when none
	Audit     *auditlog.Entry     // the audit entry A comes from; nil when none
	StoreKind storage.Kind
	// Copy is which checksum the store's copy has (storage.ChecksumOf of
	// what was read or headed); zero when the item is not in storage.
	Copy storage.CopyChecksum
	// Bytes is how many bytes were hashed to make C: the item's size
	// when its bytes were read (by the read whose C this is: the re-read's
	// when there was one), else 0.
	Bytes int64
	// Reread: the first read's C disagreed and the bytes were read again
	// (see reread.go); Sums and Info are the second read's.
	Reread bool
	// Details are notes for the bit log ("content not read", …).
	Details []string
	// AtRestJob names the at-rest checksum job whose computed MD5 is C
	// ("" when C was read or is N/A).
	AtRestJob string
}

// Method is how C was made: bitlog.MethodRead when the bytes were read
// and hashed, bitlog.MethodStored when none were (C N/A, or the item is
// not in storage).
func (o *Observation) Method() bitlog.Method {
	if o.Sums.Found && o.Sums.ContentRead {
		return bitlog.MethodRead
	}
	return bitlog.MethodStored
}

// Archived reports whether the copy was in an archival storage class
// (storage.Info.Archived, restored or not).
func (o *Observation) Archived() bool { return o.Info != nil && o.Info.Archived }

// Case is the decision table's case of the observation (Decide).
func (o *Observation) Case() int { return Decide(o.Sums) }

// CopyDiffers reports whether the store's copy is proven to differ from
// want: it is not in storage, or its bytes were read and hash to something
// else, or (bytes not read) the provider reports another checksum. A copy
// whose difference cannot be seen (not read, no provider checksum) does not
// differ, so nothing unproven is ever overwritten.
func (o *Observation) CopyDiffers(want string) bool {
	switch {
	case want == "":
		return false
	case !o.Sums.Found:
		return true
	case o.Sums.ContentRead:
		return o.Sums.Content != want
	}
	return o.Sums.Storage != "" && o.Sums.Storage != want
}

// Observe looks at one item of a registered store. An unregistered account
// or store, or an ID the store refuses, is permanent
// (processors.Permanent); provider, index and audit log errors are
// returned as they are.
func (ob *Observer) Observe(ctx context.Context, account, storeID, spaceID, contentID string) (*Observation, error) {
	return ob.observeItem(ctx, account, storeID, spaceID, contentID, observeOpts{headFirst: ob.HeadFirst})
}

// observeOpts are the options of one look.
type observeOpts struct {
	resumeKey string   // names the read's checkpoint ("" none)
	headFirst bool     // see Observer.HeadFirst
	atRest    *atRestC // C computed at rest: Head only, never a Get
	// read reads the bytes when readable (default: ob.read with
	// resumeKey); the re-read of a disagreeing read sets its own.
	read func() (*storage.Info, *storage.Sums, error)
}

// observeItem is Observe with options.
func (ob *Observer) observeItem(ctx context.Context, account, storeID, spaceID, contentID string, opts observeOpts) (*Observation, error) {
	st, err := ob.Stores.Registry().Store(account, storeID)
	if err != nil {
		return nil, processors.Permanent(fmt.Errorf("bit: %w", err))
	}
	prov, err := ob.Stores.Open(ctx, account, storeID)
	if err != nil {
		return nil, fmt.Errorf("bit: open store %s/%s: %w", account, storeID, err)
	}
	b := task.Bit{Account: account, StoreID: storeID, SpaceID: spaceID, ContentID: contentID}
	o := &Observation{StoreKind: st.Kind}
	err = ob.observeStorage(ctx, b, prov, ob.readable(account, st), opts, o)
	if err == nil {
		err = ob.observe(ctx, b, o)
	}
	// A disagreeing read is read again; a checksum computed at rest is
	// not (a read of an archived copy is what the route avoids).
	if err == nil && opts.atRest == nil && o.readDisagrees() {
		o, err = ob.readAgain(ctx, b, prov, o)
	}
	if err != nil {
		if errors.Is(err, storage.ErrInvalidID) && !processors.IsPermanent(err) {
			return nil, processors.Permanent(err) // the store refuses the ID: a retry cannot help
		}
		return nil, err
	}
	return o, nil
}

// readable reports whether C is computed for the store.
func (ob *Observer) readable(account string, st *stores.Store) bool {
	return !slices.Contains(ob.UnreadableKinds, st.Kind) &&
		!slices.Contains(ob.UnreadableStores, account+"/"+st.ID)
}

// observe gathers I and A (C and S are in o already).
func (ob *Observer) observe(ctx context.Context, b task.Bit, o *Observation) error {
	item := contentindex.Item{Account: b.Account, StoreID: b.StoreID, SpaceID: b.SpaceID, ContentID: b.ContentID}
	e, err := ob.Index.Get(ctx, item)
	switch {
	case errors.Is(err, contentindex.ErrNotFound):
	case err != nil:
		return fmt.Errorf("bit: content index get %s: %w", item, err)
	default:
		o.Index = e
		if !e.Deleted {
			o.Sums.Index = strings.ToLower(e.Checksum)
		} else {
			o.Details = append(o.Details, "content index row is a tombstone")
		}
	}
	a, err := ob.AuditLog.LatestChecksum(ctx, b.Account, b.StoreID, b.SpaceID, b.ContentID)
	switch {
	case errors.Is(err, auditlog.ErrNotFound):
	case err != nil:
		return fmt.Errorf("bit: audit log latest %s: %w", item, err)
	default:
		o.Audit = a
		if a.Action != task.ActionDeleteContent {
			o.Sums.Audit = strings.ToLower(a.Checksum)
		} else {
			o.Details = append(o.Details, "latest audit entry is DELETE_CONTENT")
		}
	}
	return nil
}

// detailNotFound is the bit log's note for an item not in storage.
const detailNotFound = "not found in storage (item or space)"

// headItem Heads the item b names; a nil Info with a nil error means it is
// not in storage, which o's Details then say.
func headItem(ctx context.Context, prov storage.Provider, b task.Bit, o *Observation) (*storage.Info, error) {
	in, err := prov.Head(ctx, b.SpaceID, b.ContentID)
	if errors.Is(err, storage.ErrNotFound) {
		o.Details = append(o.Details, detailNotFound)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bit: head %s/%s: %w", b.SpaceID, storage.ShortID(b.ContentID), err)
	}
	return in, nil
}

// observeStorage fills C, S and the claim (see the package doc). Which
// checksum the copy has is storage.ChecksumOf's answer, the rule the audit
// processor and duplication use too; S is chosen from it so that a source
// contradicting the bytes shows as C ≠ S.
func (ob *Observer) observeStorage(ctx context.Context, b task.Bit, prov storage.Provider, readable bool, opts observeOpts, o *Observation) error {
	read := opts.read
	if read == nil {
		read = func() (*storage.Info, *storage.Sums, error) {
			return ob.read(ctx, prov, b.SpaceID, b.ContentID, opts.resumeKey)
		}
	}
	var info *storage.Info
	var sums *storage.Sums // nil: the bytes were not read
	archived := false      // the bytes are archived
	if opts.atRest != nil || (readable && opts.headFirst) {
		in, err := headItem(ctx, prov, b, o)
		if err != nil || in == nil {
			return err
		}
		if opts.atRest != nil || !in.Readable() {
			info, readable, archived = in, false, in.Archived && !in.Readable()
		}
	}
	if readable {
		in, s, err := read()
		switch {
		case errors.Is(err, storage.ErrNotFound):
			o.Details = append(o.Details, detailNotFound)
			return nil
		case errors.Is(err, storage.ErrArchived):
			// The object's storage class keeps its bytes from being read
			// without a restore: C is N/A, as for a store configured
			// unreadable (see docs/ARCHITECTURE.md, Cold storage).
			readable, archived = false, true
		case err != nil:
			return fmt.Errorf("bit: read %s/%s: %w", b.SpaceID, storage.ShortID(b.ContentID), err)
		default:
			info, sums = in, s
			o.Sums.ContentRead, o.Sums.Content, o.Bytes = true, s.MD5(), s.Len()
		}
	}
	if !readable {
		if info == nil {
			in, err := headItem(ctx, prov, b, o)
			if err != nil || in == nil {
				return err
			}
			info = in
		}
		switch {
		case opts.atRest != nil:
		case archived || (info.Archived && !info.Readable()):
			o.Details = append(o.Details, fmt.Sprintf("content not read (archived: storage class %s)", info.StorageClass))
		default:
			o.Details = append(o.Details, "content not read (store configured unreadable)")
		}
	}
	o.Sums.Found, o.Info = true, info
	known := sums != nil // the MD5 of the bytes is known
	var cs storage.CopyChecksum
	if opts.atRest != nil && opts.atRest.holds(info) {
		cs, known = atRestChecksumOf(info, opts.atRest.md5), true
		o.Sums.ContentRead, o.Sums.Content, o.AtRestJob = true, opts.atRest.md5, opts.atRest.job
		o.Details = append(o.Details, fmt.Sprintf("content not read: C computed at rest by compute-checksum job %s (storage class %s)",
			opts.atRest.job, cmp.Or(info.StorageClass, "STANDARD")))
	} else {
		if opts.atRest != nil {
			o.Details = append(o.Details, fmt.Sprintf("content not read; C of compute-checksum job %s not used: the item changed (%s) after the job was created (%s)",
				opts.atRest.job, info.Modified.UTC().Format(time.RFC3339), opts.atRest.submitted.UTC().Format(time.RFC3339)))
		}
		cs = storage.ChecksumOf(info, sums)
	}
	o.Copy, o.Sums.Claim = cs, cs.Claim
	alg, val, ok := storage.SplitProviderChecksum(info.ProviderChecksum)
	switch {
	case ok && alg == storage.AlgMD5 && known && !cs.ProviderContradicted && cs.ClaimContradicted:
		// The provider vouches for the bytes; Mill's claim does not.
		o.Sums.Storage = cs.Claim
	case ok && alg == storage.AlgMD5:
		o.Sums.Storage = strings.ToLower(val)
	case ok && alg == storage.AlgCRC64NVME && sums != nil:
		if cs.ProviderVerified {
			o.Sums.Storage = cs.Claim
			if cs.Claim == "" {
				o.Sums.Storage = cs.MD5
			}
			o.Details = append(o.Details, "provider CRC64NVME verified against the content; S is the recorded MD5")
		} else {
			o.Sums.Storage = info.ProviderChecksum
			o.Details = append(o.Details, fmt.Sprintf("provider CRC64NVME %s, content CRC64NVME %s", val, storage.CRC64NVMEBase64(sums.CRC64NVME())))
		}
	case ok && alg == storage.AlgCRC64NVME:
		o.Sums.Storage = cs.Claim
		if cs.Claim == "" {
			o.Sums.Storage = info.ProviderChecksum
		}
		o.Details = append(o.Details, "provider CRC64NVME not verified (content not read); S is the recorded MD5")
	case info.ProviderChecksum == "":
		o.Sums.Storage = cs.Claim
	default:
		o.Sums.Storage = info.ProviderChecksum
		o.Details = append(o.Details, "unknown provider checksum "+info.ProviderChecksum)
	}
	if cs.ClaimContradicted {
		o.Details = append(o.Details, fmt.Sprintf("the MD5 recorded with the copy (%s) is contradicted by its %s MD5 %s: the copy is not the one Mill wrote",
			storage.QuoteID(cs.Claim), cs.Source, cs.MD5))
	}
	return nil
}
