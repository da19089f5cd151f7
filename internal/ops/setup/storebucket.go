package setup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
)

// StoreBucket is the bucket of one or more s3 stores, as keeping Mill's
// deletes and overwrites recoverable needs it (see docs/ARCHITECTURE.md,
// Safety). The bucket is the owner's: setup never creates it and never
// changes its versioning (irreversible, and billed); it adds one lifecycle
// rule per store expiring the store's trash prefix (P.mill-trash/) after
// Retention, keeping every other rule, and reports in notes:
//
//   - a bucket without versioning: the stores keep a copy of each deleted
//     or replaced object under their trash prefix;
//   - a versioned bucket whose noncurrent versions no rule expires (kept
//     and billed forever) or expire before Retention (recoverable for less).
type StoreBucket struct {
	Client     S3API
	BucketName string
	// Prefixes are the key prefixes of the stores in the bucket.
	Prefixes []string
	// Retention is how long deleted or replaced content stays
	// recoverable: whole days, at least one (default
	// storage.DefaultRetention).
	Retention time.Duration
}

// Kind implements Resource.
func (b *StoreBucket) Kind() string { return "store" }

// Name implements Resource.
func (b *StoreBucket) Name() string { return "s3://" + b.BucketName }

// RetentionDays returns d in whole days, rounded up (at least 1).
func RetentionDays(d time.Duration) int32 {
	if d <= 0 {
		d = storage.DefaultRetention
	}
	return int32(max(1, (d+24*time.Hour-1)/(24*time.Hour)))
}

// TrashRuleID is the ID of the lifecycle rule expiring the trash of the
// store with key prefix prefix.
func TrashRuleID(prefix string) string {
	if prefix == "" {
		return "mill-trash"
	}
	sum := sha256.Sum256([]byte(prefix))
	return "mill-trash-" + hex.EncodeToString(sum[:6])
}

// DefaultAbortUploadsDays is how long a store's incomplete multipart
// uploads may wait for a resume (a retried, redelivered or continued copy;
// see docs/ARCHITECTURE.md, Transfers) before S3 aborts them: longer than
// any task's retries, short enough that abandoned parts are not billed
// for long.
const DefaultAbortUploadsDays = 7

// AbortRuleID is the ID of the rule aborting the incomplete multipart
// uploads of the store at prefix.
func AbortRuleID(prefix string) string {
	return strings.Replace(TrashRuleID(prefix), "mill-trash", "mill-abort-uploads", 1)
}

// expiries returns the trash and abandoned-upload rules the bucket needs.
func (b *StoreBucket) expiries() []Expiry {
	out := make([]Expiry, 0, 2*len(b.Prefixes))
	for _, p := range b.Prefixes {
		out = append(out, Expiry{ID: TrashRuleID(p), Prefix: p + s3store.TrashPrefix, Days: RetentionDays(b.Retention)},
			Expiry{ID: AbortRuleID(p), Prefix: p, AbortDays: DefaultAbortUploadsDays})
	}
	return out
}

func (b *StoreBucket) bucket() *Bucket {
	return &Bucket{Client: b.Client, BucketName: b.BucketName, Expire: b.expiries()}
}

// Plan implements Resource: ActionUpdate when a trash rule is missing.
func (b *StoreBucket) Plan(ctx context.Context) (Change, error) {
	_, err := b.Client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b.BucketName)})
	switch {
	case err != nil && (httpStatus(err) == http.StatusNotFound || errorCode(err) == "NotFound" || errorCode(err) == "NoSuchBucket"):
		return Change{}, fmt.Errorf("store bucket %s does not exist (setup does not create store buckets)", b.BucketName)
	case err != nil:
		return Change{}, fmt.Errorf("store bucket %s: %w", b.BucketName, err)
	}
	notes, err := b.versioningNotes(ctx)
	if err != nil {
		return Change{}, err
	}
	c := Change{Action: ActionNone, Notes: notes}
	bk := b.bucket()
	for _, e := range bk.Expire {
		ok, err := bk.expirySetting(e).check(ctx)
		switch {
		case notImplemented(err):
			c.Notes = append(c.Notes, fmt.Sprintf("expiry of %s: the endpoint does not implement lifecycle rules; not checked", e.Prefix))
		case err != nil:
			return Change{}, fmt.Errorf("store bucket %s: check the expiry of %s: %w", b.BucketName, e.Prefix, err)
		case !ok:
			c.Action = ActionUpdate
			c.Reasons = append(c.Reasons, e.String()+": off → on")
		}
	}
	return c, nil
}

// Apply implements Resource: it adds the missing trash rules.
func (b *StoreBucket) Apply(ctx context.Context, _ Change) (Result, error) {
	res := Result{Status: StatusExists}
	bk := b.bucket()
	for _, e := range bk.Expire {
		s := bk.expirySetting(e)
		ok, err := s.check(ctx)
		if err == nil && !ok {
			err = s.put(ctx)
			if err == nil {
				res.Status = StatusUpdated
				res.Details = append(res.Details, s.what)
			}
		}
		switch {
		case notImplemented(err):
			res.Notes = append(res.Notes, fmt.Sprintf("%s: the endpoint does not implement it; not set", s.what))
		case err != nil:
			return Result{}, fmt.Errorf("store bucket %s: set %s: %w", b.BucketName, s.what, err)
		}
	}
	return res, nil
}

// versioningNotes says how the bucket keeps deleted and replaced content.
func (b *StoreBucket) versioningNotes(ctx context.Context) ([]string, error) {
	out, err := b.Client.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(b.BucketName)})
	if notImplemented(err) {
		return []string{"versioning: the endpoint does not implement it; not checked"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store bucket %s: get versioning: %w", b.BucketName, err)
	}
	days := RetentionDays(b.Retention)
	if out.Status != s3types.BucketVersioningStatusEnabled {
		return []string{fmt.Sprintf("not versioned: the stores keep a copy of each object they delete or replace under %s"+
			" for %d days (one copy per delete or overwrite); enable versioning on the bucket to keep noncurrent versions instead, at no copy",
			strings.Join(b.trashPrefixes(), ", "), days)}, nil
	}
	rules, err := b.bucket().lifecycleRules(ctx)
	if notImplemented(err) {
		return []string{"versioned; lifecycle rules: the endpoint does not implement them; not checked"}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store bucket %s: get lifecycle rules: %w", b.BucketName, err)
	}
	var notes []string
	for _, p := range b.Prefixes {
		id, n, found := noncurrentExpiry(rules, p)
		switch {
		case !found:
			notes = append(notes, fmt.Sprintf("versioned; no lifecycle rule expires the noncurrent versions under %q: they are kept (and billed) until one does; %d days is what Mill needs", p, days))
		case n < days:
			notes = append(notes, fmt.Sprintf("versioned; rule %q expires noncurrent versions after %d days, before the retention of %d: deleted or replaced content under %q is recoverable for %d days only", id, n, days, p, n))
		}
	}
	return notes, nil
}

func (b *StoreBucket) trashPrefixes() []string {
	out := make([]string, 0, len(b.Prefixes))
	for _, p := range b.Prefixes {
		out = append(out, p+s3store.TrashPrefix)
	}
	return out
}

// noncurrentExpiry finds the shortest NoncurrentVersionExpiration of the
// enabled rules that apply to every key under prefix (filtered by a prefix
// of it, or not by prefix; rules filtered by tags apply to some keys only
// and are left out).
func noncurrentExpiry(rules []s3types.LifecycleRule, prefix string) (id string, days int32, found bool) {
	for _, r := range rules {
		if r.Status != s3types.ExpirationStatusEnabled || r.NoncurrentVersionExpiration == nil {
			continue
		}
		//lint:ignore SA1019 a rule written with the deprecated top-level prefix still applies
		rp := aws.ToString(r.Prefix)
		if f := r.Filter; f != nil {
			if f.Tag != nil || (f.And != nil && len(f.And.Tags) > 0) {
				continue
			}
			rp = aws.ToString(f.Prefix)
			if f.And != nil {
				rp = aws.ToString(f.And.Prefix)
			}
		}
		if !strings.HasPrefix(prefix, rp) {
			continue
		}
		n := aws.ToInt32(r.NoncurrentVersionExpiration.NoncurrentDays)
		if !found || n < days {
			id, days, found = aws.ToString(r.ID), n, true
		}
	}
	return id, days, found
}
