package gcsstore

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/api/googleapi"

	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// Defaults and GCS limits.
const (
	// DefaultThreshold: content up to this size is buffered, checked and
	// sent in one request; larger content is a resumable upload.
	DefaultThreshold = 16 << 20
	// DefaultChunkSize of resumable uploads (a multiple of 256 KiB).
	DefaultChunkSize = 16 << 20
	chunkUnit        = 256 << 10
	MaxChunkSize     = 1 << 30

	MaxNameLen = 1024 // GCS object names, UTF-8 bytes
	// MaxMetadataSize is GCS's limit on an object's custom metadata
	// (keys plus values).
	MaxMetadataSize = 8 << 10

	// MetaMD5, MetaProps and MetaCRC64 are the custom-metadata keys of an
	// item's MD5, properties and Mill's CRC-64/NVME (base64, as S3 writes
	// it) of the bytes Mill sent.
	MetaMD5   = "mill-md5"
	MetaProps = "mill-props"
	MetaCRC64 = "mill-crc64nvme"

	// TrashPrefix holds what a delete or overwrite replaced.
	TrashPrefix = objstore.TrashPrefix
)

// Config describes one store.
type Config struct {
	// Bucket holding the store (required).
	Bucket string `validate:"required"`
	// Prefix of every object name of the store, normally ending in '/';
	// "" uses the whole bucket.
	Prefix string
	// Upload: content up to Threshold (or of unknown size ending within
	// it; default 16 MiB, at most 1 GiB) is buffered whole and sent in
	// one request; larger content is a resumable upload in chunks of
	// PartSize (a multiple of 256 KiB, default 16 MiB, at most 1 GiB),
	// one at a time (Streams is 1).
	storage.Upload
}

// uploadRules holds the defaults and GCS's limits of Config.Upload.
var uploadRules = objstore.UploadRules{
	Default:      storage.Upload{Threshold: DefaultThreshold, Transfer: storage.Transfer{PartSize: DefaultChunkSize, Streams: 1}},
	MaxThreshold: MaxChunkSize, MinPartSize: chunkUnit, MaxPartSize: MaxChunkSize, PartUnit: chunkUnit, MaxStreams: 1,
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.Upload = uploadRules.WithDefaults(c.Upload)
	return c
}

func (c Config) validate() error {
	p := validate.Struct("gcsstore: Config", c)
	objstore.CheckPrefix(p, c.Prefix, MaxNameLen)
	uploadRules.Check(p, c.Upload)
	return p.Err()
}

var (
	_ storage.Provider     = (*Store)(nil)
	_ storage.Recoverer    = (*Store)(nil)
	_ storage.RangeReader  = (*Store)(nil)
	_ storage.SpaceCreator = (*Store)(nil)
)

// Store is a Google Cloud Storage store. It is safe for concurrent use.
// Its space methods (CreateSpace, CreateSpaceIfAbsent, DeleteSpace,
// SpaceACLs, SetSpaceACLs) are those of the marker objects every
// object-store provider keeps (the layout in the package doc). Its
// MaxContentIDLen is GCS's 1024-byte name limit less the prefix, the
// space and a slash.
type Store struct {
	client *Client
	bucket objects
	cfg    Config
	layout objstore.Layout
	spaces objstore.Spaces
	// methods are the store's space methods, ListContent, Put, Head, Get,
	// Delete, SetProperties, MaxContentIDLen, Versions and Restore
	// (objstore.Methods).
	methods
}

// methods are the methods every object-store provider shares: the
// embedded field is unexported, only its methods are the store's.
type methods = objstore.Methods[attrs]

// New returns the store cfg describes, using client (see NewClient). It
// does not create the bucket.
func New(client *Client, cfg Config) (*Store, error) {
	if client == nil {
		return nil, errors.New("gcsstore: new: nil client")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Store{client: client, bucket: objects{svc: client.svc, bucket: cfg.Bucket, retry: client.retry}, cfg: cfg}
	s.layout = objstore.Layout{Prefix: cfg.Prefix, MaxNameLen: MaxNameLen}
	s.spaces = objstore.Spaces{Layout: s.layout, Backend: markers{s}, Wrap: wrap}
	s.methods = objstore.Provider[attrs]{
		Spaces:    s.spaces,
		Put:       objstore.Put{Threshold: cfg.Threshold, CheckProps: metaNames.CheckProps, NeedSpace: s.spaces.Need, Whole: s.putSmall, Stream: s.putLarge},
		Recovery:  s.recovery(),
		GetRange:  s.GetRange,
		ListNames: s.listNames,
	}.Methods()
	return s, nil
}

// Config returns the store's configuration with defaults applied.
func (s *Store) Config() Config { return s.cfg }

// Kind returns storage.KindGCS.
func (s *Store) Kind() storage.Kind { return storage.KindGCS }

// mapErr maps GCS errors onto storage's portable errors (keeping the
// original in the chain); other errors pass unchanged.
var mapErr = objstore.MapErr(gcsKind, storage.ErrChanged)

// gcsKind names the storage error a GCS error is (nil: none). This is
// the one place GCS errors are interpreted.
func gcsKind(err error) error {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		switch ge.Code {
		case http.StatusNotFound:
			return storage.ErrNotFound
		case http.StatusPreconditionFailed:
			return storage.ErrChanged
		case http.StatusBadRequest:
			if strings.Contains(strings.ToLower(ge.Message), "hash") || strings.Contains(strings.ToLower(ge.Message), "crc32c") {
				return storage.ErrChecksumMismatch
			}
		}
	}
	return nil
}

// wrap names the store, the operation and the key in an error mapped by
// mapErr.
var wrap = objstore.Wrap("gcsstore", mapErr)

// conditionFailed reports whether err is GCS refusing a conditional write.
func conditionFailed(err error) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == http.StatusPreconditionFailed
}

// metaNames are the custom-metadata entries of an item.
var metaNames = objstore.Metadata{MD5: MetaMD5, Props: MetaProps, CRC64: MetaCRC64, Limit: MaxMetadataSize, What: "GCS custom metadata"}

// infoOf describes an object as an item.
func infoOf(a *attrs, id string) *storage.Info {
	// GCS computes the MD5 of every object written in one piece (not of a
	// composite object, which has only its CRC32C): the provider checksum.
	info := objstore.Attrs{
		MD5:        a.Metadata[MetaMD5],
		Size:       a.Size,
		Mime:       a.ContentType,
		Modified:   a.Updated,
		Revision:   strconv.FormatInt(a.Generation, 10),
		ContentMD5: a.MD5,
		Props:      a.Metadata[MetaProps],
	}.Info(id)
	if a.StorageClass != "STANDARD" {
		info.StorageClass = a.StorageClass
	}
	return info
}

// deleteKey removes an object of the store's own (a temporary upload, a
// trash copy being undone) on a best-effort basis: generation gen when
// it is known (> 0), which makes the delete retried.
func (s *Store) deleteKey(ctx context.Context, key string, gen int64) {
	dctx, cancel := objstore.Detached(ctx)
	defer cancel()
	_ = s.bucket.delete(dctx, key, gen)
}
