package s3store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/objstore"
)

// Defaults and S3 limits.
const (
	DefaultMultipartThreshold = 16 << 20
	DefaultPartSize           = storage.DefaultPartSize // 8 MiB
	// DefaultCopyThreshold is S3's CopyObject limit: larger server-side
	// copies use UploadPartCopy.
	DefaultCopyThreshold = 5 << 30
	DefaultCopyPartSize  = 512 << 20

	MinPartSize     = 5 << 20 // S3's smallest part (all but the last)
	MaxPartSize     = 5 << 30
	MaxParts        = 10000
	MaxStreams      = 64
	MaxKeyLen       = 1024
	MaxMetadataSize = 2048 // user metadata, keys plus values

	// MetaMD5 and MetaProps are the user-metadata keys of an item's MD5 and
	// properties.
	MetaMD5   = "mill-md5"
	MetaProps = "mill-props"
)

// Config describes one store.
type Config struct {
	// Bucket holding the store (required).
	Bucket string `validate:"required"`
	// Prefix of every key of the store, normally ending in '/'; "" uses
	// the whole bucket.
	Prefix string
	// Upload: content larger than Threshold (or of unknown size and
	// longer than one part) is uploaded in parts. Content up to it is
	// buffered whole (its MD5 must be checked before S3 commits it).
	// Threshold: default 16 MiB; at most 5 GiB. PartSize, of multipart
	// uploads and of ranged reads (GetRange through storage.Open):
	// default 8 MiB, at least 5 MiB; it is raised for a known size that
	// would need more than 10 000 parts. Streams is how many parts a
	// multipart upload or a multipart server-side copy has in flight
	// (default storage.DefaultStreams, 4; at most 64).
	storage.Upload
	// CopyThreshold: server-side copies larger than this use
	// UploadPartCopy. Default (and maximum) 5 GiB.
	CopyThreshold int64
	// CopyPartSize of multipart server-side copies. Default 512 MiB.
	CopyPartSize int64
	// Layout is how spaces and items map onto S3: LayoutMill ("", the
	// default: Bucket and Prefix hold every space) or LayoutDuraCloud
	// (a bucket per space, as DuraCloud's S3StorageProvider keeps them;
	// Bucket and Prefix then hold only the store's own bookkeeping: trash
	// copies and temporary uploads). See the package doc.
	Layout string
	// AccountPrefix names the space buckets of LayoutDuraCloud: the
	// 20-character prefix DuraCloud put before every space ID (the AWS
	// access key ID it was configured with), in any case.
	AccountPrefix string
}

// uploadRules holds the defaults and S3's limits of Config.Upload.
var uploadRules = objstore.UploadRules{
	Default:      storage.Upload{Threshold: DefaultMultipartThreshold, Transfer: storage.Transfer{PartSize: DefaultPartSize, Streams: storage.DefaultStreams}},
	MaxThreshold: MaxPartSize, MinPartSize: MinPartSize, MaxPartSize: MaxPartSize, MaxStreams: MaxStreams,
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	defaults.Fill(&c, defaultConfig)
	c.Upload = uploadRules.WithDefaults(c.Upload)
	if c.Layout == LayoutDuraCloud {
		c.AccountPrefix = strings.ToLower(c.AccountPrefix)
	}
	return c
}

// defaultConfig holds the values WithDefaults gives a Config's zero fields
// (the upload's come from uploadRules).
var defaultConfig = Config{CopyThreshold: DefaultCopyThreshold, CopyPartSize: DefaultCopyPartSize}

func (c Config) validate() error {
	p := validate.Struct("s3store: Config", c)
	objstore.CheckPrefix(p, c.Prefix, MaxKeyLen)
	uploadRules.Check(p, c.Upload)
	p.Check(c.CopyThreshold > 0 && c.CopyThreshold <= DefaultCopyThreshold, "CopyThreshold", c.CopyThreshold, "be within 1..%d", int64(DefaultCopyThreshold))
	p.Check(c.CopyPartSize >= MinPartSize && c.CopyPartSize <= MaxPartSize, "CopyPartSize", c.CopyPartSize, "be within %d..%d", MinPartSize, int64(MaxPartSize))
	c.validateLayout(p)
	return p.Err()
}

var (
	_ storage.Provider         = (*Store)(nil)
	_ storage.ServerSideCopier = (*Store)(nil)
	_ storage.Recoverer        = (*Store)(nil)
	_ storage.RangeReader      = (*Store)(nil)
)

// Store is an S3 store. It is safe for concurrent use.
type Store struct {
	client *s3.Client
	cfg    Config
	// layout names the store's own objects under its prefix: the space
	// markers and items of the Mill layout, and in either layout the
	// trash copies and temporary uploads.
	layout objstore.Layout
	// spaces are the space markers of the Mill layout.
	spaces objstore.Spaces

	// The bucket's versioning status, asked at most every
	// versioningCheckEvery (see recover.go).
	vmu      sync.Mutex
	vstatus  types.BucketVersioningStatus
	vchecked time.Time
}

// New returns the store cfg describes, using client (built by the caller,
// e.g. awsconfig.Config.S3). It does not create the bucket.
func New(client *s3.Client, cfg Config) (*Store, error) {
	if client == nil {
		return nil, errors.New("s3store: new: nil client")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Store{client: client, cfg: cfg}
	s.layout = objstore.Layout{Prefix: cfg.Prefix, MaxNameLen: MaxKeyLen}
	s.spaces = objstore.Spaces{Layout: s.layout, Backend: markers{s}, Wrap: wrap}
	return s, nil
}

// Config returns the store's configuration with defaults applied.
func (s *Store) Config() Config { return s.cfg }

// Kind returns storage.KindS3.
func (s *Store) Kind() storage.Kind { return storage.KindS3 }

// MaxContentIDLen returns the longest content ID the store accepts in
// space: S3's 1024-byte key limit less the prefix, the space and a slash.
func (s *Store) MaxContentIDLen(space string) int {
	if s.dura() {
		return storage.MaxContentIDLen // the key is the content ID
	}
	return s.layout.MaxContentIDLen(space)
}

// mapErr maps S3 errors onto storage's portable errors (keeping the
// original in the chain); other errors pass unchanged.
var mapErr = objstore.MapErr(s3Kind, storage.ErrInvalidProperty, storage.ErrArchived, ErrTooLarge)

// s3Kind names the storage error an S3 error is (nil: none). This is
// the one place S3 error codes are interpreted.
func s3Kind(err error) error {
	switch errorCode(err) {
	case "NoSuchKey", "NotFound", "NoSuchBucket", "NoSuchUpload":
		return storage.ErrNotFound
	case "BadDigest", "InvalidDigest", "XAmzContentChecksumMismatch":
		return storage.ErrChecksumMismatch
	case "PreconditionFailed", "ConditionalRequestConflict":
		return storage.ErrChanged
	case "MetadataTooLarge":
		return storage.ErrPropertiesTooLarge
	case "KeyTooLongError":
		return storage.ErrInvalidID
	case "InvalidObjectState", "ObjectNotInActiveTierError":
		// GetObject of an archived object not restored; CopyObject
		// from one.
		return storage.ErrArchived
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound {
		return storage.ErrNotFound
	}
	return nil
}

// errorCode returns the S3 error code of err, or "".
func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// wrap names the store, the operation and the key in an error mapped by
// mapErr.
var wrap = objstore.Wrap("s3store", mapErr)

// contentKey returns the object of an item: in the store's bucket under
// its prefix (Layout.ContentKey), or (DuraCloud layout) in the space's own
// bucket under the content ID itself.
func (s *Store) contentKey(space, id string) (object, error) {
	if !s.dura() {
		key, err := s.layout.ContentKey(space, id)
		if err != nil {
			return object{}, err
		}
		return object{bucket: s.cfg.Bucket, key: key}, nil
	}
	if err := s.validSpace(space); err != nil {
		return object{}, err
	}
	if err := storage.ValidateContentID(id); err != nil {
		return object{}, err
	}
	return object{bucket: s.duraBucket(space), key: id}, nil
}

// unsignedPayload lets a request carry a body the signer cannot hash
// up front (a non-seekable stream over plain HTTP) or need not (its
// integrity rides on Content-MD5 or an x-amz-checksum header), and keeps
// the SDK from adding checksums of its own.
func unsignedPayload(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
	o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
}

// noResponseValidation asks for the object's checksums (to report them in
// Info) without the SDK validating the body against them: that check could
// only fail at the very end of a stream the caller has already consumed.
// Callers verify what they read against Info.Checksum (MD5) instead, as
// storage.Copy and the bit checker do.
func noResponseValidation(o *s3.Options) {
	o.DisableLogOutputChecksumValidationSkipped = true
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		_, err := st.Deserialize.Remove("AWSChecksum:ValidateOutputPayloadChecksum")
		if err != nil && !strings.Contains(err.Error(), "not found") {
			return err
		}
		return nil
	})
}

// metadata builds an item's user metadata, refusing more than S3 stores.
func metadata(md5hex string, props map[string]string) (map[string]string, error) {
	m := map[string]string{}
	if md5hex != "" {
		m[MetaMD5] = md5hex
	}
	if len(props) > 0 {
		v, err := objstore.ASCIIJSON(props)
		if err != nil {
			return nil, err
		}
		m[MetaProps] = v
	}
	// Count as if the MD5 were present: a multipart put adds it later.
	size := len(MetaMD5) + 32
	if v, ok := m[MetaProps]; ok {
		size += len(MetaProps) + len(v)
	}
	if size > MaxMetadataSize {
		return nil, fmt.Errorf("%w: the properties need %d bytes of S3 user metadata (limit %d)", storage.ErrPropertiesTooLarge, size, MaxMetadataSize)
	}
	return m, nil
}

// deleteKey removes key (one version of it when version is set, which
// leaves no delete marker) on a best-effort basis.
func (s *Store) deleteKey(ctx context.Context, o object) {
	dctx, cancel := objstore.Detached(ctx)
	defer cancel()
	if o.version != "" {
		_, err := s.client.DeleteObject(dctx, &s3.DeleteObjectInput{Bucket: aws.String(o.bucket), Key: aws.String(o.key), VersionId: aws.String(o.version)})
		if err == nil {
			return
		}
		// Not allowed to delete versions: at least make it not current.
	}
	_, _ = s.client.DeleteObject(dctx, &s3.DeleteObjectInput{Bucket: aws.String(o.bucket), Key: aws.String(o.key)})
}

// SetProperties replaces the item's properties with a copy of the object
// onto itself (which also sets its modified time to now).
func (s *Store) SetProperties(ctx context.Context, space, id string, props map[string]string) error {
	key, err := s.contentKey(space, id)
	if err != nil {
		return wrap("set properties", space+"/"+id, err)
	}
	info, err := s.head(ctx, key, id)
	if err != nil {
		return wrap("set properties", space+"/"+id, err)
	}
	meta, err := s.encodeMeta(info.Checksum, props)
	if err != nil {
		return wrap("set properties", space+"/"+id, err)
	}
	undo, err := s.preserve(ctx, key, space, id, info, storage.ReplacedByProperties)
	if err != nil {
		return wrap("set properties", space+"/"+id, err)
	}
	if _, err := s.copyObject(ctx, key, key, info.Size, meta, info.MimeType); err != nil {
		undo()
		return wrap("set properties", space+"/"+id, err)
	}
	return nil
}

// Delete removes the item, keeping it recoverable (see recover.go); a
// missing item or space is success.
func (s *Store) Delete(ctx context.Context, space, id string) error {
	key, err := s.contentKey(space, id)
	if err != nil {
		return wrap("delete", space+"/"+id, err)
	}
	// Read the item first: a missing one needs nothing (in a versioned
	// bucket a delete would add another delete marker), and an existing
	// one is kept recoverable.
	info, err := s.head(ctx, key, id)
	if errors.Is(mapErr(err), storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return wrap("delete", space+"/"+id, err)
	}
	undo, err := s.preserve(ctx, key, space, id, info, storage.ReplacedByDelete)
	if err != nil {
		return wrap("delete", space+"/"+id, err)
	}
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(key.bucket), Key: aws.String(key.key)})
	if errors.Is(mapErr(err), storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		undo()
	}
	return wrap("delete", space+"/"+id, err)
}

// getOptions are the options of a GetObject: the object's checksums
// without response validation and, when ctx asks for a new connection
// (storage.WithNewConnection), an HTTP client of its own.
func getOptions(ctx context.Context) []func(*s3.Options) {
	if storage.NewConnection(ctx) {
		return []func(*s3.Options){noResponseValidation, newConnection}
	}
	return []func(*s3.Options){noResponseValidation}
}

// newConnection gives one request an HTTP client whose connection pool is
// its own and keeps nothing: the request dials a new connection, used for
// it alone. A client that cannot be copied that way (not the SDK's
// buildable client every Mill client is) gets the request marked
// Connection: close, which at least keeps its connection from being
// reused afterwards.
func newConnection(o *s3.Options) {
	switch c := o.HTTPClient.(type) {
	case *awshttp.BuildableClient:
		o.HTTPClient = c.WithTransportOptions(func(t *http.Transport) { t.DisableKeepAlives = true })
	case nil:
		o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) { t.DisableKeepAlives = true })
	default:
		o.HTTPClient = closingClient{c}
	}
}

type closingClient struct{ next aws.HTTPClient }

func (c closingClient) Do(r *http.Request) (*http.Response, error) {
	r.Close = true
	return c.next.Do(r)
}
