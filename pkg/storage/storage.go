package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/base/permanent"
)

// Kind names a kind of store.
type Kind string

// Store kinds.
const (
	KindS3 Kind = "s3"
	KindFS Kind = "fs"
	// KindGCS is a Google Cloud Storage store (pkg/storage/gcsstore).
	KindGCS Kind = "gcs"
	// KindAzure is an Azure Blob Storage store (pkg/storage/azstore).
	KindAzure Kind = "azure"
)

// Portable errors. Every provider maps its native errors onto these in one
// place; callers test them with errors.Is. ErrInvalidID, ErrInvalidProperty,
// ErrUnsafe and ErrArchived say of themselves that retrying cannot help (a Permanent
// method, which processors.IsPermanent reads: Workman dead-letters the
// task at once).
var (
	// ErrNotFound: the space or content item does not exist.
	ErrNotFound = errors.New("storage: not found")
	// ErrSpaceNotEmpty: DeleteSpace on a space that still holds content.
	ErrSpaceNotEmpty = errors.New("storage: space not empty")
	// ErrChecksumMismatch: the bytes written do not match the expected MD5;
	// nothing was committed.
	ErrChecksumMismatch = errors.New("storage: checksum mismatch")
	// ErrInvalidID: a space or content ID the provider refuses (empty, NUL,
	// escaping the store's root, too long, …).
	ErrInvalidID = permanent.New("storage: invalid id")
	// ErrPropertiesTooLarge: properties exceed what the provider can store
	// (S3 user metadata is limited to 2 KB).
	ErrPropertiesTooLarge = errors.New("storage: properties too large")
	// ErrInvalidProperty: a property name or space ACL entry the provider
	// cannot store as given (DuraCloud's S3 layout keeps property names as
	// HTTP header names, which S3 lower-cases, and ACLs as bucket tags).
	ErrInvalidProperty = permanent.New("storage: invalid property")
	// ErrUnsafe: the store's own files or objects are not as the provider
	// writes them (a symbolic link or a forged sidecar in a filesystem
	// store), so the provider refuses to read, write or delete through
	// them. Retrying cannot help: an operator must look at the store.
	ErrUnsafe = permanent.New("storage: unsafe")
	// ErrArchived: the item's bytes are in an archival storage class (S3
	// Glacier Flexible Retrieval, Deep Archive, an Intelligent-Tiering
	// archive tier) and no restored copy is available, so they cannot be
	// read now; Head still answers. See Info.Readable and Restorer.
	ErrArchived = permanent.New("storage: archived (restore it before reading)")
)

// Info describes one content item.
type Info struct {
	ContentID string
	// Checksum is the MD5 (lower-case hex) of the content as recorded when
	// it was written — DuraCloud's content checksum. It is a claim stored
	// with the copy: which checksum the copy has is ChecksumOf's answer.
	Checksum string
	// ProviderChecksum is the storage provider's own whole-object checksum
	// as the provider reports it, prefixed with its algorithm:
	// "md5:<hex>" (an S3 single-part ETag; a filesystem store's sidecar
	// MD5 while the blob is the file it wrote, else the blob's MD5 now) or
	// "crc64nvme:<base64>" (an S3 full-object checksum of a multipart
	// upload). Never a multipart ETag.
	ProviderChecksum string
	Size             int64
	MimeType         string
	Modified         time.Time
	// Revision is an opaque token that changes whenever the item's bytes
	// are rewritten (an S3 ETag); "" when the provider has none. Ranged
	// reads of one revision refuse another (RangeReader, ErrChanged).
	Revision string
	// Properties are the user properties of the item (system values —
	// checksum, size, mimetype, modified — are the fields above).
	Properties map[string]string
	// StorageClass is the provider's storage class of the item as it
	// reports it (S3: "GLACIER", "DEEP_ARCHIVE", "STANDARD_IA", …); ""
	// for the provider's default (S3 STANDARD, every fs item).
	StorageClass string
	// Archived reports that the bytes are in an archival tier from which
	// they must be restored before they can be read (S3 GLACIER and
	// DEEP_ARCHIVE, or an Intelligent-Tiering archive access tier).
	Archived bool
	// Restore is the state of a temporary restored copy of an archived
	// item (RestoreNone when none was asked for or it expired).
	Restore RestoreState
}

// RestoreState is the state of a restore of an archived item.
type RestoreState string

// Restore states.
const (
	RestoreNone     RestoreState = ""
	RestoreOngoing  RestoreState = "ongoing"  // asked for, not done yet
	RestoreRestored RestoreState = "restored" // a temporary copy can be read
)

// Readable reports whether the item's bytes can be read now: it is not
// archived, or a restored copy of it is available.
func (i *Info) Readable() bool { return !i.Archived || i.Restore == RestoreRestored }

// PutOptions describe content being written.
type PutOptions struct {
	// Size of the content in bytes, or -1 when unknown (streaming).
	Size int64
	// Checksum, when set, is the expected MD5 (hex). The provider verifies
	// it while writing and commits nothing when it does not match
	// (ErrChecksumMismatch).
	Checksum   string
	MimeType   string
	Properties map[string]string
	// StorageClass, when set, is the provider's storage class to write
	// the item in (Info.StorageClass: S3 "GLACIER", "DEEP_ARCHIVE", …; a
	// repair keeps the class of the copy it replaces). Providers without
	// classes ignore it.
	StorageClass string
	// Transfer tunes a provider that writes in parts (zero: defaults).
	Transfer Transfer
	// Resume, when set, makes a long write resumable: a provider that
	// can (s3store, for a multipart upload of a reader that is an
	// io.ReaderAt) keeps its progress there and a later Put with the same
	// Resume continues it (see Resume). Others ignore it.
	Resume *Resume
	// Replaces is the item the put overwrites as the caller just read it
	// (Head); with ReplacesRead and Replaces nil, the item was read and
	// found absent. A provider that keeps an overwritten item recoverable
	// (s3store in an unversioned bucket) then does not read it again: it
	// keeps that revision under a precondition on its Revision
	// (ErrChanged when it was rewritten since), and writes over an item
	// read as absent only if none appeared since (ErrChanged). Others
	// ignore it.
	Replaces     *Info
	ReplacesRead bool
}

// Provider is one store: a set of spaces holding content items.
//
// Contract (every provider passes storagetest.Run):
//
//   - IDs: a space ID is one path segment (ValidateSpaceID); a content ID
//     is any non-empty UTF-8 string of at most MaxContentIDLen bytes
//     without control characters (ValidateContentID; it may contain
//     slashes, spaces, unicode). Providers reject IDs they cannot store
//     safely with ErrInvalidID.
//   - Listing: ListSpaces and ListContent return IDs in byte-wise ascending
//     order (S3's order) so listings of two providers can be merged.
//     ListContent returns up to limit IDs strictly after the marker `after`
//     ("" = from the start) and whether more follow.
//   - Missing spaces and items give ErrNotFound on every operation except
//     CreateSpace (creates), DeleteSpace and Delete (already gone is
//     success).
//   - Put streams r to the store with bounded memory, verifies
//     opts.Checksum when set, and is atomic: a failed or cancelled Put
//     leaves the previous version (or nothing) in place. Put returns the
//     stored item's Info. Get returns a stream the caller must close.
//   - SetProperties replaces the user properties of an existing item.
//   - All methods are safe for concurrent use; cancelling ctx abandons
//     the call.
type Provider interface {
	Kind() Kind

	ListSpaces(ctx context.Context) ([]string, error)
	CreateSpace(ctx context.Context, space string) error
	// DeleteSpace removes an empty space (ErrSpaceNotEmpty otherwise).
	DeleteSpace(ctx context.Context, space string) error
	// SpaceACLs returns the space's access control list (user or group →
	// permission); ErrNotFound when the space does not exist.
	SpaceACLs(ctx context.Context, space string) (map[string]string, error)
	SetSpaceACLs(ctx context.Context, space string, acls map[string]string) error

	ListContent(ctx context.Context, space, after string, limit int) (ids []string, more bool, err error)
	Head(ctx context.Context, space, contentID string) (*Info, error)
	Get(ctx context.Context, space, contentID string) (io.ReadCloser, *Info, error)
	Put(ctx context.Context, space, contentID string, r io.Reader, opts PutOptions) (*Info, error)
	SetProperties(ctx context.Context, space, contentID string, props map[string]string) error
	Delete(ctx context.Context, space, contentID string) error
}

// Opener opens the provider of a registered store, an account's store by
// its id; *stores.Opener implements it. The processors and producers take
// one (or an interface embedding it) in their Config.
type Opener interface {
	Open(ctx context.Context, account, storeID string) (Provider, error)
}

// DefaultRetention is how long providers keep what Mill deletes or
// replaces recoverable, unless configured otherwise.
const DefaultRetention = 30 * 24 * time.Hour

// Why a Version stopped being the current content of its item.
const (
	ReplacedByDelete     = "deleted"     // the item was deleted
	ReplacedByOverwrite  = "overwritten" // new content was written over it (a put, a copy, a restore)
	ReplacedByProperties = "properties"  // its properties were replaced (same content)
)

// Version is an earlier state of a content item that a Recoverer keeps.
type Version struct {
	// ID names the version for Restore. It is opaque and specific to the
	// provider (a trash entry, an S3 version ID).
	ID string
	// Replaced is when the version stopped being current.
	Replaced time.Time
	// Reason is one of the ReplacedBy… values, or "" when the provider
	// cannot tell.
	Reason string
	// Info describes the item as it was in this version.
	Info Info
}

// SpaceCreator is implemented by providers that can tell whether a
// CreateSpace created the space: among any number of callers creating one
// space at the same time, in one process or several, exactly one is told
// it did (a conditional write), so the audited decorator audits a space's
// creation once.
type SpaceCreator interface {
	// CreateSpaceIfAbsent creates space unless it exists, and reports
	// whether this call created it. An existing space is left as it is.
	CreateSpaceIfAbsent(ctx context.Context, space string) (created bool, err error)
}

// Restorer is implemented by providers with archival storage classes (the
// S3 provider): RequestRestore asks for a temporary readable copy of an
// archived item for days days, at a retrieval tier (RestoreBulk — the
// cheapest, and the default when tier is "" — RestoreStandard or
// RestoreExpedited). It returns started == true when this call started a
// restore, false when one is already in progress or done (both are
// success: asking again is harmless), ErrNotFound for a missing item, and
// an error when the item is not archived or the tier is not one of these.
type Restorer interface {
	RequestRestore(ctx context.Context, space, contentID string, days int, tier RestoreTier) (started bool, err error)
}

// RestoreTier is the retrieval tier of a restore: how fast, and at what
// price (S3: Bulk 5–12 hours from Glacier Flexible Retrieval and up to 48
// from Deep Archive; Standard 3–5 and 12 hours; Expedited minutes, not
// for Deep Archive).
type RestoreTier string

// Restore tiers.
const (
	RestoreBulk      RestoreTier = "Bulk"
	RestoreStandard  RestoreTier = "Standard"
	RestoreExpedited RestoreTier = "Expedited"
)

// ParseRestoreTier reads a tier name (Bulk, Standard or Expedited, any
// case); "" is RestoreBulk.
func ParseRestoreTier(s string) (RestoreTier, error) {
	for _, t := range []RestoreTier{RestoreBulk, RestoreStandard, RestoreExpedited} {
		if strings.EqualFold(s, string(t)) {
			return t, nil
		}
	}
	if s == "" {
		return RestoreBulk, nil
	}
	return "", fmt.Errorf("storage: restore tier %q: want Bulk, Standard or Expedited", s)
}

// Recoverer is implemented by providers that keep what they delete or
// replace recoverable for a retention period (see docs/ARCHITECTURE.md,
// Safety). Both Mill's providers do, for every write:
//
//   - Delete of an existing item, a Put or server-side copy over an
//     existing item, and SetProperties each keep the state they replace
//     as a Version, before it is replaced; a first write keeps nothing.
//   - A write that fails commits nothing and keeps nothing new.
//   - Versions survive DeleteSpace; they never appear in ListSpaces or
//     ListContent.
//   - Versions expire after the provider's retention period.
type Recoverer interface {
	// Versions lists the recoverable versions of an item, newest first;
	// none is an empty list, not an error. The space need not exist.
	Versions(ctx context.Context, space, contentID string) ([]Version, error)
	// Restore makes a version (by its ID; "" = the newest) the item's
	// current content again, with the checksum, mimetype and properties
	// it had, and returns the item's new Info. A restore is an overwrite:
	// whatever is current is kept as a Version in turn. ErrNotFound when
	// the version does not exist (or the item has none) or the space does
	// not exist.
	Restore(ctx context.Context, space, contentID, versionID string) (*Info, error)
}
