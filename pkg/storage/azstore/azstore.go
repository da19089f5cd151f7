package azstore

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// Defaults and Azure limits.
const (
	// DefaultThreshold: content up to this size is buffered, checked and
	// sent in one Put Blob; larger content is staged in blocks.
	DefaultThreshold = 16 << 20
	// MaxThreshold bounds the one-request buffer (memory).
	MaxThreshold = 256 << 20
	// DefaultBlockSize of staged uploads.
	DefaultBlockSize = 16 << 20
	MinBlockSize     = 64 << 10
	MaxBlockSize     = 4000 << 20 // Azure's largest block
	MaxBlocks        = 50000
	MaxStreams       = 64

	MaxNameLen = 1024 // blob names, characters
	// MaxMetadataSize is Azure's limit on a blob's metadata (names plus
	// values).
	MaxMetadataSize = 8 << 10

	// MetaMD5, MetaProps and MetaCRC64 are the metadata names of an item's
	// MD5, properties and Mill's CRC-64/NVME (base64) of the bytes it
	// sent. Azure metadata names are C# identifiers: no hyphens.
	MetaMD5   = "millmd5"
	MetaProps = "millprops"
	MetaCRC64 = "millcrc64nvme"

	// TrashPrefix holds what a delete or overwrite replaced.
	TrashPrefix = objstore.TrashPrefix
)

// Config describes one store.
type Config struct {
	// Prefix of every blob name of the store, normally ending in '/'; ""
	// uses the whole container.
	Prefix string
	// Upload: content up to Threshold (default 16 MiB; at most 256 MiB:
	// Azure's Put Blob limit is 5000 MiB, the buffer is memory) is sent
	// in one Put Blob; larger content is staged in blocks of PartSize
	// (default 16 MiB, 64 KiB..4000 MiB), Streams at once (default
	// storage.DefaultStreams; at most 64).
	storage.Upload
}

// uploadRules holds the defaults and Azure's limits of Config.Upload.
var uploadRules = objstore.UploadRules{
	Default:      storage.Upload{Threshold: DefaultThreshold, Transfer: storage.Transfer{PartSize: DefaultBlockSize, Streams: storage.DefaultStreams}},
	MaxThreshold: MaxThreshold, MinPartSize: MinBlockSize, MaxPartSize: MaxBlockSize, MaxStreams: MaxStreams,
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.Upload = uploadRules.WithDefaults(c.Upload)
	return c
}

func (c Config) validate() error {
	p := validate.Struct("azstore: Config", c)
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

// Store is an Azure Blob store: a container and a prefix. It is safe for
// concurrent use.
// Its space methods (CreateSpace, CreateSpaceIfAbsent, DeleteSpace,
// SpaceACLs, SetSpaceACLs) are those of the marker objects every
// object-store provider keeps (the layout in the package doc). Its
// MaxContentIDLen is Azure's 1024-character name limit less the prefix,
// the space and a slash, counted in bytes (never fewer than characters).
type Store struct {
	c      *container.Client
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
type methods = objstore.Methods[props]

// New returns the store on the container c (see NewClient) that cfg
// describes. It does not create the container.
func New(c *container.Client, cfg Config) (*Store, error) {
	if c == nil {
		return nil, errors.New("azstore: new: nil container client")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Store{c: c, cfg: cfg}
	s.layout = objstore.Layout{Prefix: cfg.Prefix, MaxNameLen: MaxNameLen, Encode: encodeName, EncodedWhat: " as a blob name", Decode: decodeName}
	s.spaces = objstore.Spaces{Layout: s.layout, Backend: markers{s}, Wrap: wrap}
	s.methods = objstore.Provider[props]{
		Spaces:    s.spaces,
		Put:       objstore.Put{Threshold: cfg.Threshold, CheckProps: metaNames.CheckProps, NeedSpace: s.spaces.Need, Whole: s.putSmall, Stream: s.putBlocks},
		Recovery:  s.recovery(),
		GetRange:  s.GetRange,
		ListNames: s.listNames,
	}.Methods()
	return s, nil
}

// Config returns the store's configuration with defaults applied.
func (s *Store) Config() Config { return s.cfg }

// Kind returns storage.KindAzure.
func (s *Store) Kind() storage.Kind { return storage.KindAzure }

// Azure reads a backslash in a blob name as a slash, so content IDs are
// stored under names in which '[' is "[0" and '\' is "[1": an encoding
// that keeps byte-wise order (listings stay in ID order) and is one to one.
var nameEncoder = strings.NewReplacer("[", "[0", `\`, "[1")

func encodeName(id string) string { return nameEncoder.Replace(id) }

// decodeName reverses encodeName; ok is false for a name it cannot have
// made (a blob written by another tool).
func decodeName(name string) (id string, ok bool) {
	if !strings.Contains(name, "[") {
		return name, !strings.Contains(name, `\`)
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '\\':
			return "", false
		case c != '[':
			b.WriteByte(c)
		case i+1 < len(name) && name[i+1] == '0':
			b.WriteByte('[')
			i++
		case i+1 < len(name) && name[i+1] == '1':
			b.WriteByte('\\')
			i++
		default:
			return "", false
		}
	}
	return b.String(), true
}

// mapErr maps Azure errors onto storage's portable errors (keeping the
// original in the chain); other errors pass unchanged.
var mapErr = objstore.MapErr(azureKind, storage.ErrChanged)

// azureKind names the storage error an Azure error is (nil: none). This
// is the one place Azure error codes are interpreted.
func azureKind(err error) error {
	switch {
	case bloberror.HasCode(err, bloberror.BlobNotFound, bloberror.ContainerNotFound, bloberror.CannotVerifyCopySource):
		return storage.ErrNotFound
	case bloberror.HasCode(err, bloberror.MD5Mismatch, bloberror.CRC64Mismatch):
		return storage.ErrChecksumMismatch
	case bloberror.HasCode(err, bloberror.ConditionNotMet):
		return storage.ErrChanged
	case bloberror.HasCode(err, bloberror.MetadataTooLarge):
		return storage.ErrPropertiesTooLarge
	case bloberror.HasCode(err, bloberror.InvalidURI, bloberror.InvalidResourceName):
		return storage.ErrInvalidID
	}
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
		return storage.ErrNotFound
	}
	return nil
}

// wrap names the store, the operation and the key in an error mapped by
// mapErr.
var wrap = objstore.Wrap("azstore", mapErr)

// conditionFailed reports whether err is Azure refusing a conditional
// write: 412, or 409 BlobAlreadyExists for If-None-Match: *.
func conditionFailed(err error) bool {
	if bloberror.HasCode(err, bloberror.ConditionNotMet, bloberror.BlobAlreadyExists) {
		return true
	}
	var re *azcore.ResponseError
	return errors.As(err, &re) && (re.StatusCode == http.StatusPreconditionFailed || re.StatusCode == http.StatusConflict)
}

// metadata builds an item's metadata, refusing more than Azure stores.
func metadata(md5hex, crc string, props map[string]string) (map[string]*string, error) {
	m, err := metaNames.Build(md5hex, crc, props)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = &v
	}
	return out, nil
}

// metaNames are the metadata entries of an item; the properties' JSON is
// ASCII, as HTTP headers carry it.
var metaNames = objstore.Metadata{MD5: MetaMD5, Props: MetaProps, CRC64: MetaCRC64, Limit: MaxMetadataSize, What: "Azure metadata", ASCII: true}

// meta reads a metadata value by name, ignoring case (the SDK reports
// names as the HTTP headers carried them).
func meta(m map[string]*string, name string) string {
	for k, v := range m {
		if strings.EqualFold(k, name) && v != nil {
			return *v
		}
	}
	return ""
}

// deleteKey removes a blob on a best-effort basis.
func (s *Store) deleteKey(ctx context.Context, key string) {
	dctx, cancel := objstore.Detached(ctx)
	defer cancel()
	_, _ = s.c.NewBlobClient(key).Delete(dctx, nil)
}
