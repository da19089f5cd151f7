package s3store

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/millfleet/mill/internal/validate"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/internal/ctxio"
)

// Defaults and S3 limits.
const (
	DefaultMultipartThreshold = 16 << 20
	DefaultPartSize           = 16 << 20
	// DefaultCopyThreshold is S3's CopyObject limit: larger server-side
	// copies use UploadPartCopy.
	DefaultCopyThreshold = 5 << 30
	DefaultCopyPartSize  = 512 << 20

	MinPartSize     = 5 << 20 // S3's smallest part (all but the last)
	MaxPartSize     = 5 << 30
	MaxParts        = 10000
	MaxKeyLen       = 1024
	MaxMetadataSize = 2048 // user metadata, keys plus values

	// MetaMD5 and MetaProps are the user-metadata keys of an item's MD5 and
	// properties.
	MetaMD5   = "mill-md5"
	MetaProps = "mill-props"

	tmpPrefix = ".mill-tmp/"
)

// Config describes one store.
type Config struct {
	// Bucket holding the store (required).
	Bucket string
	// Prefix of every key of the store, normally ending in '/'; "" uses
	// the whole bucket.
	Prefix string
	// MultipartThreshold: content larger than this (or of unknown size
	// and longer than one part) is uploaded in parts. Content up to it is
	// buffered whole (its MD5 must be checked before S3 commits it), so it
	// bounds a put's memory together with PartSize. Default 16 MiB; at
	// most 5 GiB.
	MultipartThreshold int64
	// PartSize of multipart uploads. Default 16 MiB, at least 5 MiB. It is
	// raised for a known size that would need more than 10 000 parts.
	PartSize int64
	// CopyThreshold: server-side copies larger than this use
	// UploadPartCopy. Default (and maximum) 5 GiB.
	CopyThreshold int64
	// CopyPartSize of multipart server-side copies. Default 512 MiB.
	CopyPartSize int64
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.MultipartThreshold == 0 {
		c.MultipartThreshold = DefaultMultipartThreshold
	}
	if c.PartSize == 0 {
		c.PartSize = DefaultPartSize
	}
	if c.CopyThreshold == 0 {
		c.CopyThreshold = DefaultCopyThreshold
	}
	if c.CopyPartSize == 0 {
		c.CopyPartSize = DefaultCopyPartSize
	}
	return c
}

func (c Config) validate() error {
	p := validate.New("s3store: Config")
	p.Require("Bucket", c.Bucket != "")
	p.Check(len(c.Prefix) <= MaxKeyLen/2, "Prefix", fmt.Sprintf("(%d bytes)", len(c.Prefix)), "be at most %d bytes", MaxKeyLen/2)
	p.Check(c.MultipartThreshold >= 0 && c.MultipartThreshold <= MaxPartSize, "MultipartThreshold", c.MultipartThreshold, "be within 0..%d", int64(MaxPartSize))
	p.Check(c.PartSize >= MinPartSize && c.PartSize <= MaxPartSize, "PartSize", c.PartSize, "be within %d..%d", MinPartSize, int64(MaxPartSize))
	p.Check(c.CopyThreshold > 0 && c.CopyThreshold <= DefaultCopyThreshold, "CopyThreshold", c.CopyThreshold, "be within 1..%d", int64(DefaultCopyThreshold))
	p.Check(c.CopyPartSize >= MinPartSize && c.CopyPartSize <= MaxPartSize, "CopyPartSize", c.CopyPartSize, "be within %d..%d", MinPartSize, int64(MaxPartSize))
	return p.Err()
}

var (
	_ storage.Provider         = (*Store)(nil)
	_ storage.ServerSideCopier = (*Store)(nil)
	_ storage.Recoverer        = (*Store)(nil)
)

// Store is an S3 store. It is safe for concurrent use.
type Store struct {
	client *s3.Client
	cfg    Config

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
	return &Store{client: client, cfg: cfg}, nil
}

// Config returns the store's configuration with defaults applied.
func (s *Store) Config() Config { return s.cfg }

// Kind returns storage.KindS3.
func (s *Store) Kind() storage.Kind { return storage.KindS3 }

// MaxContentIDLen returns the longest content ID the store accepts in
// space: S3's 1024-byte key limit less the prefix, the space and a slash.
func (s *Store) MaxContentIDLen(space string) int {
	return min(storage.MaxContentIDLen, MaxKeyLen-len(s.cfg.Prefix)-len(space)-1)
}

// mapErr maps S3 errors onto storage's portable errors (keeping the
// original in the chain); other errors pass unchanged. This is the one
// place S3 error codes are interpreted.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	for _, e := range []error{storage.ErrNotFound, storage.ErrInvalidID, storage.ErrChecksumMismatch, storage.ErrSpaceNotEmpty, storage.ErrPropertiesTooLarge, storage.ErrArchived, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, e) {
			return err
		}
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "NoSuchKey", "NotFound", "NoSuchBucket", "NoSuchUpload":
			return fmt.Errorf("%w: %w", storage.ErrNotFound, err)
		case "BadDigest", "InvalidDigest", "XAmzContentChecksumMismatch":
			return fmt.Errorf("%w: %w", storage.ErrChecksumMismatch, err)
		case "MetadataTooLarge":
			return fmt.Errorf("%w: %w", storage.ErrPropertiesTooLarge, err)
		case "KeyTooLongError":
			return fmt.Errorf("%w: %w", storage.ErrInvalidID, err)
		case "InvalidObjectState", "ObjectNotInActiveTierError":
			// GetObject of an archived object not restored; CopyObject
			// from one.
			return fmt.Errorf("%w: %w", storage.ErrArchived, err)
		}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound {
		return fmt.Errorf("%w: %w", storage.ErrNotFound, err)
	}
	return err
}

func wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("s3store: %s %s: %w", op, storage.QuoteID(key), mapErr(err))
}

func (s *Store) spaceKey(space string) (string, error) {
	if err := storage.ValidateSpaceID(space); err != nil {
		return "", err
	}
	return s.cfg.Prefix + space, nil
}

func (s *Store) contentKey(space, id string) (string, error) {
	if err := storage.ValidateSpaceID(space); err != nil {
		return "", err
	}
	if err := storage.ValidateContentID(id); err != nil {
		return "", err
	}
	if max := s.MaxContentIDLen(space); len(id) > max {
		return "", fmt.Errorf("%w: content ID is %d bytes; with the store prefix and space %q the limit is %d", storage.ErrInvalidID, len(id), space, max)
	}
	return s.cfg.Prefix + space + "/" + id, nil
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

// spaceRecord is the body of a space marker.
type spaceRecord struct {
	ACLs map[string]string `json:"acls"`
}

// ListSpaces returns the spaces (marker objects) in byte-wise order.
func (s *Store) ListSpaces(ctx context.Context) ([]string, error) {
	out := []string{}
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket:    aws.String(s.cfg.Bucket),
		Prefix:    aws.String(s.cfg.Prefix),
		Delimiter: aws.String("/"),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, wrap("list spaces", s.cfg.Prefix, err)
		}
		for _, o := range page.Contents {
			name := strings.TrimPrefix(aws.ToString(o.Key), s.cfg.Prefix)
			if storage.ValidateSpaceID(name) == nil {
				out = append(out, name)
			}
		}
	}
	return out, nil
}

func (s *Store) readSpace(ctx context.Context, space string) (*spaceRecord, error) {
	key, err := s.spaceKey(space)
	if err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(key)})
	if err != nil {
		if errors.Is(mapErr(err), storage.ErrNotFound) {
			return nil, fmt.Errorf("%w: space %q", storage.ErrNotFound, space)
		}
		return nil, err
	}
	defer out.Body.Close()
	var rec spaceRecord
	if err := json.NewDecoder(io.LimitReader(out.Body, 10<<20)).Decode(&rec); err != nil {
		return nil, fmt.Errorf("space marker %s: %w", key, err)
	}
	if rec.ACLs == nil {
		rec.ACLs = map[string]string{}
	}
	return &rec, nil
}

func (s *Store) writeSpace(ctx context.Context, space string, rec *spaceRecord) error {
	key, err := s.spaceKey(space)
	if err != nil {
		return err
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:      aws.String(s.cfg.Bucket),
		Key:         aws.String(key),
		Body:        bytes.NewReader(b),
		ContentType: aws.String("application/json"),
	})
	return err
}

// needSpace returns ErrNotFound unless the space marker exists.
func (s *Store) needSpace(ctx context.Context, space string) error {
	key, err := s.spaceKey(space)
	if err != nil {
		return err
	}
	_, err = s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(key)})
	if err != nil && errors.Is(mapErr(err), storage.ErrNotFound) {
		return fmt.Errorf("%w: space %q", storage.ErrNotFound, space)
	}
	return err
}

// CreateSpace writes the space marker unless it exists (keeping its ACLs).
func (s *Store) CreateSpace(ctx context.Context, space string) error {
	_, err := s.CreateSpaceIfAbsent(ctx, space)
	return err
}

var _ storage.SpaceCreator = (*Store)(nil)

// CreateSpaceIfAbsent implements storage.SpaceCreator: after a HEAD finds
// no marker, the marker is written with If-None-Match: *, which S3 refuses
// (412, or 409 when a concurrent conditional write is in progress) once
// another writer created it — so the ACLs another writer set are kept and
// only one writer is told it created the space. An S3-compatible store
// that ignores the condition is back to last writer wins.
func (s *Store) CreateSpaceIfAbsent(ctx context.Context, space string) (bool, error) {
	err := s.needSpace(ctx, space)
	if err == nil || !errors.Is(err, storage.ErrNotFound) {
		return false, wrap("create space", space, err)
	}
	key, err := s.spaceKey(space)
	if err != nil {
		return false, wrap("create space", space, err)
	}
	b, _ := json.Marshal(&spaceRecord{ACLs: map[string]string{}})
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:      aws.String(s.cfg.Bucket),
		Key:         aws.String(key),
		Body:        bytes.NewReader(b),
		ContentType: aws.String("application/json"),
		IfNoneMatch: aws.String("*"),
	})
	if conditionFailed(err) {
		return false, nil
	}
	return err == nil, wrap("create space", space, err)
}

// conditionFailed reports whether err is S3 refusing a conditional write
// because of its condition: 412 Precondition Failed, or 409
// ConditionalRequestConflict (a concurrent conditional write won).
func conditionFailed(err error) bool {
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "PreconditionFailed", "ConditionalRequestConflict":
			return true
		}
	}
	var re *awshttp.ResponseError
	return errors.As(err, &re) && (re.HTTPStatusCode() == http.StatusPreconditionFailed || re.HTTPStatusCode() == http.StatusConflict)
}

// DeleteSpace deletes the marker of an empty space; a missing space is
// success.
func (s *Store) DeleteSpace(ctx context.Context, space string) error {
	err := s.needSpace(ctx, space)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return wrap("delete space", space, err)
	}
	out, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{
		Bucket:  aws.String(s.cfg.Bucket),
		Prefix:  aws.String(s.cfg.Prefix + space + "/"),
		MaxKeys: aws.Int32(1),
	})
	if err != nil {
		return wrap("delete space", space, err)
	}
	if len(out.Contents) > 0 {
		return wrap("delete space", space, storage.ErrSpaceNotEmpty)
	}
	key, _ := s.spaceKey(space)
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(key)})
	return wrap("delete space", space, err)
}

// SpaceACLs returns the space's ACLs from its marker.
func (s *Store) SpaceACLs(ctx context.Context, space string) (map[string]string, error) {
	rec, err := s.readSpace(ctx, space)
	if err != nil {
		return nil, wrap("space acls", space, err)
	}
	return rec.ACLs, nil
}

// SetSpaceACLs replaces the space's ACLs in its marker.
func (s *Store) SetSpaceACLs(ctx context.Context, space string, acls map[string]string) error {
	if err := s.needSpace(ctx, space); err != nil {
		return wrap("set space acls", space, err)
	}
	if acls == nil {
		acls = map[string]string{}
	}
	return wrap("set space acls", space, s.writeSpace(ctx, space, &spaceRecord{ACLs: acls}))
}

// ListContent lists up to limit IDs after `after` with ListObjectsV2
// (StartAfter), in S3's byte-wise order.
func (s *Store) ListContent(ctx context.Context, space, after string, limit int) ([]string, bool, error) {
	es, more, err := s.ListEntries(ctx, space, after, limit)
	if err != nil {
		return nil, false, err
	}
	ids := make([]string, len(es))
	for i, e := range es {
		ids[i] = e.ID
	}
	return ids, more, nil
}

// ListEntries implements storage.EntryLister: ListContent with each
// object's size and storage class, from the same ListObjectsV2 page.
func (s *Store) ListEntries(ctx context.Context, space, after string, limit int) ([]storage.Entry, bool, error) {
	if err := storage.ValidateSpaceID(space); err != nil {
		return nil, false, wrap("list", space, err)
	}
	if limit <= 0 {
		limit = storage.DefaultPageSize
	}
	prefix := s.cfg.Prefix + space + "/"
	in := &s3.ListObjectsV2Input{
		Bucket:  aws.String(s.cfg.Bucket),
		Prefix:  aws.String(prefix),
		MaxKeys: aws.Int32(int32(min(limit, 1000))),
	}
	if after != "" {
		in.StartAfter = aws.String(prefix + after)
	}
	out, err := s.client.ListObjectsV2(ctx, in)
	if err != nil {
		return nil, false, wrap("list", space, err)
	}
	es := make([]storage.Entry, 0, len(out.Contents))
	for _, o := range out.Contents {
		es = append(es, storage.Entry{
			ID:           strings.TrimPrefix(aws.ToString(o.Key), prefix),
			Size:         aws.ToInt64(o.Size),
			StorageClass: storageClass(string(o.StorageClass)),
		})
	}
	if len(es) == 0 {
		// An empty page: say whether the space is there at all.
		if err := s.needSpace(ctx, space); err != nil {
			return nil, false, wrap("list", space, err)
		}
	}
	return es, aws.ToBool(out.IsTruncated) && len(es) > 0, nil
}

// storageClass is Info.StorageClass of an S3 storage class: "" for
// STANDARD, which HeadObject leaves out and ListObjectsV2 names.
func storageClass(c string) string {
	if c == string(types.StorageClassStandard) {
		return ""
	}
	return c
}

// archived reports whether an object's bytes need a restore before they
// can be read: the GLACIER and DEEP_ARCHIVE classes, and the archive
// access tiers of INTELLIGENT_TIERING (HeadObject's ArchiveStatus).
// GLACIER_IR is read like any other class.
func archived(class string, archive types.ArchiveStatus) bool {
	return class == string(types.StorageClassGlacier) || class == string(types.StorageClassDeepArchive) || archive != ""
}

// restoreState reads the x-amz-restore header: `ongoing-request="true"`
// while a restore runs, `ongoing-request="false", expiry-date="…"` while
// the restored copy is there.
func restoreState(h string) storage.RestoreState {
	switch {
	case strings.Contains(h, `ongoing-request="true"`):
		return storage.RestoreOngoing
	case strings.Contains(h, `ongoing-request="false"`):
		return storage.RestoreRestored
	}
	return storage.RestoreNone
}

// attrs are what HeadObject and GetObject both report.
type attrs struct {
	etag, crc64nvme string
	checksumType    types.ChecksumType
	size            *int64
	mime            *string
	modified        *time.Time
	metadata        map[string]string
	class           string
	archive         types.ArchiveStatus
	restore         *string
}

func metaGet(m map[string]string, key string) (string, bool) {
	if v, ok := m[key]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}

func (a attrs) info(id string) (*storage.Info, error) {
	info := &storage.Info{
		ContentID:  id,
		Size:       aws.ToInt64(a.size),
		MimeType:   aws.ToString(a.mime),
		Modified:   aws.ToTime(a.modified).UTC(),
		Properties: map[string]string{},
	}
	info.Checksum, _ = metaGet(a.metadata, MetaMD5)
	if v, ok := metaGet(a.metadata, MetaProps); ok && v != "" {
		if err := json.Unmarshal([]byte(v), &info.Properties); err != nil {
			return nil, fmt.Errorf("metadata %s: %w", MetaProps, err)
		}
	}
	info.ProviderChecksum = providerChecksum(a.etag, a.crc64nvme, a.checksumType)
	info.StorageClass = storageClass(a.class)
	info.Archived = archived(info.StorageClass, a.archive)
	info.Restore = restoreState(aws.ToString(a.restore))
	return info, nil
}

// providerChecksum picks the whole-object checksum S3 reports: the ETag of
// a single-part object (its MD5), else a full-object CRC64NVME; "" when
// there is neither (a multipart object with composite checksums).
func providerChecksum(etag, crc string, ct types.ChecksumType) string {
	etag = strings.Trim(etag, `"`)
	if storage.ValidMD5(strings.ToLower(etag)) {
		return storage.ProviderMD5(strings.ToLower(etag))
	}
	if crc != "" && (ct == "" || ct == types.ChecksumTypeFullObject) {
		return storage.AlgCRC64NVME + ":" + crc
	}
	return ""
}

func (s *Store) head(ctx context.Context, key, id string) (*storage.Info, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket:       aws.String(s.cfg.Bucket),
		Key:          aws.String(key),
		ChecksumMode: types.ChecksumModeEnabled,
	})
	if err != nil {
		return nil, err
	}
	return attrs{
		etag: aws.ToString(out.ETag), crc64nvme: aws.ToString(out.ChecksumCRC64NVME), checksumType: out.ChecksumType,
		size: out.ContentLength, mime: out.ContentType, modified: out.LastModified, metadata: out.Metadata,
		class: string(out.StorageClass), archive: out.ArchiveStatus, restore: out.Restore,
	}.info(id)
}

// Head returns the item's Info.
func (s *Store) Head(ctx context.Context, space, id string) (*storage.Info, error) {
	key, err := s.contentKey(space, id)
	if err != nil {
		return nil, wrap("head", space+"/"+id, err)
	}
	info, err := s.head(ctx, key, id)
	return info, wrap("head", space+"/"+id, err)
}

// Get streams the item; the Info comes from the same response.
func (s *Store) Get(ctx context.Context, space, id string) (io.ReadCloser, *storage.Info, error) {
	key, err := s.contentKey(space, id)
	if err != nil {
		return nil, nil, wrap("get", space+"/"+id, err)
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket:       aws.String(s.cfg.Bucket),
		Key:          aws.String(key),
		ChecksumMode: types.ChecksumModeEnabled,
	}, noResponseValidation)
	if err != nil {
		return nil, nil, wrap("get", space+"/"+id, err)
	}
	info, err := attrs{
		etag: aws.ToString(out.ETag), crc64nvme: aws.ToString(out.ChecksumCRC64NVME), checksumType: out.ChecksumType,
		size: out.ContentLength, mime: out.ContentType, modified: out.LastModified, metadata: out.Metadata,
		class: string(out.StorageClass), restore: out.Restore,
	}.info(id)
	if err != nil {
		out.Body.Close()
		return nil, nil, wrap("get", space+"/"+id, err)
	}
	return out.Body, info, nil
}

// asciiJSON marshals v as JSON with every non-ASCII character escaped, so
// that it survives an HTTP header unchanged.
func asciiJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		switch {
		case r < utf8.RuneSelf:
			sb.WriteRune(r)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&sb, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			fmt.Fprintf(&sb, `\u%04x`, r)
		}
	}
	return sb.String(), nil
}

// metadata builds an item's user metadata, refusing more than S3 stores.
func metadata(md5hex string, props map[string]string) (map[string]string, error) {
	m := map[string]string{}
	if md5hex != "" {
		m[MetaMD5] = md5hex
	}
	if len(props) > 0 {
		v, err := asciiJSON(props)
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

func mimeOr(m string) string {
	if m == "" {
		return storage.DefaultMimeType
	}
	return m
}

// Put uploads r to the item: one request up to MultipartThreshold, a
// multipart upload above it (see the package doc).
func (s *Store) Put(ctx context.Context, space, id string, r io.Reader, opts storage.PutOptions) (*storage.Info, error) {
	info, err := s.put(ctx, space, id, r, opts)
	return info, wrap("put", space+"/"+id, err)
}

func (s *Store) put(ctx context.Context, space, id string, r io.Reader, opts storage.PutOptions) (*storage.Info, error) {
	key, err := s.contentKey(space, id)
	if err != nil {
		return nil, err
	}
	want, err := storage.NormalizeMD5(opts.Checksum)
	if err != nil {
		return nil, err
	}
	if _, err := metadata(want, opts.Properties); err != nil {
		return nil, err
	}
	if err := s.needSpace(ctx, space); err != nil {
		return nil, err
	}
	r = ctxio.NewReader(ctx, r)
	p := &putter{s: s, key: key, id: id, want: want, opts: opts, mime: mimeOr(opts.MimeType),
		keep: func(ctx context.Context) (func(), error) {
			return s.preserve(ctx, key, space, id, nil, storage.ReplacedByOverwrite)
		}}
	info, err := p.run(ctx, r)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return info, err
}

type putter struct {
	s    *Store
	key  string
	id   string
	want string
	opts storage.PutOptions
	mime string
	// keep is called just before the put commits over the item's key: it
	// keeps what is there recoverable, and returns how to drop that copy
	// when the commit fails.
	keep func(ctx context.Context) (undo func(), err error)
}

func (p *putter) run(ctx context.Context, r io.Reader) (*storage.Info, error) {
	size, threshold := p.opts.Size, p.s.cfg.MultipartThreshold
	switch {
	case size >= 0 && size <= threshold:
		buf := make([]byte, size+1) // one byte more reveals a longer stream
		n, err := io.ReadFull(r, buf)
		if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			return nil, err
		}
		if int64(n) != size {
			return nil, fmt.Errorf("read %d bytes or more, PutOptions.Size says %d", n, size)
		}
		return p.single(ctx, buf[:n])
	case size < 0:
		buf := make([]byte, p.s.cfg.PartSize)
		n, err := io.ReadFull(r, buf)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return p.single(ctx, buf[:n])
		}
		if err != nil {
			return nil, err
		}
		return p.multipart(ctx, r, buf)
	default:
		partSize := max(p.s.cfg.PartSize, (size+MaxParts-1)/MaxParts)
		if partSize > MaxPartSize {
			return nil, fmt.Errorf("%d bytes is more than S3 stores in one object", size)
		}
		return p.multipart(ctx, io.LimitReader(r, size+1), make([]byte, partSize)[:0])
	}
}

// single uploads buffered content with Content-MD5.
func (p *putter) single(ctx context.Context, data []byte) (*storage.Info, error) {
	sum := md5.Sum(data)
	got := hex.EncodeToString(sum[:])
	if p.want != "" && got != p.want {
		return nil, fmt.Errorf("%w: content MD5 %s, expected %s", storage.ErrChecksumMismatch, got, p.want)
	}
	meta, err := metadata(got, p.opts.Properties)
	if err != nil {
		return nil, err
	}
	undo, err := p.keep(ctx)
	if err != nil {
		return nil, err
	}
	out, err := p.s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(p.s.cfg.Bucket),
		Key:           aws.String(p.key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		ContentMD5:    aws.String(base64.StdEncoding.EncodeToString(sum[:])),
		ContentType:   aws.String(p.mime),
		Metadata:      meta,
	}, unsignedPayload)
	if err != nil {
		undo()
		return nil, err
	}
	return p.info(got, int64(len(data)), aws.ToString(out.ETag), "")
}

func (p *putter) info(md5hex string, size int64, etag, crc string) (*storage.Info, error) {
	props := map[string]string{}
	for k, v := range p.opts.Properties {
		props[k] = v
	}
	pc := providerChecksum(etag, crc, types.ChecksumTypeFullObject)
	if alg, v, _ := storage.SplitProviderChecksum(pc); alg == storage.AlgMD5 && v != md5hex {
		return nil, fmt.Errorf("%w: S3 ETag %s differs from the content MD5 %s", storage.ErrChecksumMismatch, etag, md5hex)
	}
	return &storage.Info{
		ContentID:        p.id,
		Checksum:         md5hex,
		ProviderChecksum: pc,
		Size:             size,
		MimeType:         p.mime,
		Modified:         time.Now().UTC().Truncate(time.Second),
		Properties:       props,
	}, nil
}

// multipart uploads r in parts of len(buf[:cap]) bytes, the first part
// already in buf when len(buf) > 0. The upload goes to the item's key when
// the MD5 is known up front, else to a temporary key committed by a
// server-side copy. Every failure aborts the upload.
func (p *putter) multipart(ctx context.Context, r io.Reader, buf []byte) (_ *storage.Info, err error) {
	s := p.s
	target := p.key
	if p.want == "" {
		target = s.cfg.Prefix + tmpPrefix + randHex()
	}
	meta, err := metadata(p.want, p.opts.Properties)
	if err != nil {
		return nil, err
	}
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket:            aws.String(s.cfg.Bucket),
		Key:               aws.String(target),
		ContentType:       aws.String(p.mime),
		Metadata:          meta,
		ChecksumAlgorithm: types.ChecksumAlgorithmCrc64nvme,
		ChecksumType:      types.ChecksumTypeFullObject,
	})
	if err != nil {
		return nil, err
	}
	uploadID := created.UploadId
	completed := false
	defer func() {
		if completed {
			return
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
			Bucket: aws.String(s.cfg.Bucket), Key: aws.String(target), UploadId: uploadID,
		})
	}()

	h := md5.New()
	var crc uint64
	var total int64
	var parts []types.CompletedPart
	prefilled := len(buf) > 0
	buf = buf[:cap(buf)]
	for num := int32(1); ; num++ {
		var n int
		var rerr error
		if prefilled {
			n, prefilled = len(buf), false
		} else {
			n, rerr = io.ReadFull(r, buf)
		}
		if rerr != nil && rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
			return nil, rerr
		}
		if n > 0 {
			if num > MaxParts {
				return nil, fmt.Errorf("content needs more than %d parts of %d bytes", MaxParts, len(buf))
			}
			part := buf[:n]
			h.Write(part)
			crc = crc64.Update(crc, storage.CRC64NVMETable, part)
			partCRC := storage.CRC64NVMEBase64(crc64.Checksum(part, storage.CRC64NVMETable))
			out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
				Bucket:            aws.String(s.cfg.Bucket),
				Key:               aws.String(target),
				UploadId:          uploadID,
				PartNumber:        aws.Int32(num),
				Body:              bytes.NewReader(part),
				ContentLength:     aws.Int64(int64(n)),
				ChecksumCRC64NVME: aws.String(partCRC),
			}, unsignedPayload)
			if err != nil {
				return nil, err
			}
			parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num), ChecksumCRC64NVME: aws.String(partCRC)})
			total += int64(n)
		}
		if rerr != nil {
			break
		}
	}
	if p.opts.Size >= 0 && total != p.opts.Size {
		return nil, fmt.Errorf("read %d bytes or more, PutOptions.Size says %d", total, p.opts.Size)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if p.want != "" && got != p.want {
		return nil, fmt.Errorf("%w: content MD5 %s, expected %s", storage.ErrChecksumMismatch, got, p.want)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	undo := func() {}
	if target == p.key {
		if undo, err = p.keep(ctx); err != nil {
			return nil, err
		}
	}
	fullCRC := storage.CRC64NVMEBase64(crc)
	done, err := s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket:            aws.String(s.cfg.Bucket),
		Key:               aws.String(target),
		UploadId:          uploadID,
		MultipartUpload:   &types.CompletedMultipartUpload{Parts: parts},
		ChecksumCRC64NVME: aws.String(fullCRC),
		ChecksumType:      types.ChecksumTypeFullObject,
	})
	if err != nil {
		undo()
		return nil, err
	}
	completed = true
	if c := aws.ToString(done.ChecksumCRC64NVME); c != "" && c != fullCRC {
		// Remove exactly the version just written: in a versioned bucket
		// the previous one becomes current again.
		s.deleteKey(ctx, target, aws.ToString(done.VersionId))
		return nil, fmt.Errorf("%w: S3 reports CRC64NVME %s, the stream had %s", storage.ErrChecksumMismatch, c, fullCRC)
	}
	if target == p.key {
		return p.info(got, total, "", fullCRC)
	}
	// Commit the temporary object under the item's key with its MD5, then
	// remove the temporary object for good (its version, in a versioned
	// bucket, rather than leave a noncurrent copy behind).
	defer s.deleteKey(ctx, target, aws.ToString(done.VersionId))
	fullMeta, err := metadata(got, p.opts.Properties)
	if err != nil {
		return nil, err
	}
	undo, err = p.keep(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := s.copyObject(ctx, object{bucket: s.cfg.Bucket, key: target}, p.key, total, fullMeta, p.mime); err != nil {
		undo()
		return nil, err
	}
	info, err := s.head(ctx, p.key, p.id)
	if err != nil {
		return nil, err
	}
	if info.Checksum != got || info.Size != total {
		return nil, fmt.Errorf("%w: committed copy has MD5 %s and %d bytes, the stream had %s and %d", storage.ErrChecksumMismatch, info.Checksum, info.Size, got, total)
	}
	return info, nil
}

// deleteKey removes key (one version of it when version is set, which
// leaves no delete marker) on a best-effort basis.
func (s *Store) deleteKey(ctx context.Context, key, version string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if version != "" {
		_, err := s.client.DeleteObject(dctx, &s3.DeleteObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(key), VersionId: aws.String(version)})
		if err == nil {
			return
		}
		// Not allowed to delete versions: at least make it not current.
	}
	_, _ = s.client.DeleteObject(dctx, &s3.DeleteObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(key)})
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
	meta, err := metadata(info.Checksum, props)
	if err != nil {
		return wrap("set properties", space+"/"+id, err)
	}
	undo, err := s.preserve(ctx, key, space, id, info, storage.ReplacedByProperties)
	if err != nil {
		return wrap("set properties", space+"/"+id, err)
	}
	if _, err := s.copyObject(ctx, object{bucket: s.cfg.Bucket, key: key}, key, info.Size, meta, info.MimeType); err != nil {
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
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.cfg.Bucket), Key: aws.String(key)})
	if errors.Is(mapErr(err), storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		undo()
	}
	return wrap("delete", space+"/"+id, err)
}

func randHex() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
