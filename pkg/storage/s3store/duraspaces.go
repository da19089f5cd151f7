package s3store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/pkg/storage"
)

// The spaces of DuraCloud's layout: a bucket each, space properties and
// ACLs as its tags (see the package doc, DuraCloud layout).

// duraSpaces lists the buckets named with the account prefix whose rest
// is a valid space ID, in byte-wise order of the space IDs.
func (s *Store) duraSpaces(ctx context.Context) ([]string, error) {
	pre := s.cfg.AccountPrefix + "."
	out := []string{}
	p := s3.NewListBucketsPaginator(s.client, &s3.ListBucketsInput{Prefix: aws.String(pre)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, wrap("list spaces", pre, err)
		}
		for _, b := range page.Buckets {
			space, ok := strings.CutPrefix(aws.ToString(b.Name), pre)
			if ok && s.validSpace(space) == nil {
				out = append(out, space)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// duraNeedSpace returns ErrNotFound unless the space's bucket exists.
func (s *Store) duraNeedSpace(ctx context.Context, space string) error {
	if err := s.validSpace(space); err != nil {
		return err
	}
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.duraBucket(space))})
	if err != nil && errors.Is(mapErr(err), storage.ErrNotFound) {
		return fmt.Errorf("%w: space %q", storage.ErrNotFound, space)
	}
	return err
}

// duraCreateSpace creates the space's bucket, tagged with its creation
// time as DuraCloud tags it, unless it exists. Among concurrent creators
// the one whose claim (claimKey, If-None-Match: *) is written first is told
// it created the space. DeleteSpace removes the claim; a space bucket
// deleted by something else leaves it, and Mill's next creation of that
// space is then not told it created it.
func (s *Store) duraCreateSpace(ctx context.Context, space string) (bool, error) {
	err := s.duraNeedSpace(ctx, space)
	if err == nil || !errors.Is(err, storage.ErrNotFound) {
		return false, err
	}
	bucket := s.duraBucket(space)
	in := &s3.CreateBucketInput{Bucket: aws.String(bucket)}
	if r := s.client.Options().Region; r != "" && r != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(r)}
	}
	_, err = s.client.CreateBucket(ctx, in)
	var owned *types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) && errorCode(err) != "OperationAborted" {
		return false, err
	}
	// S3 answers its owner re-creating a bucket with 200 in us-east-1, so
	// who created the space is decided by a conditional write of a claim.
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:      aws.String(s.cfg.Bucket),
		Key:         aws.String(s.claimKey(space)),
		Body:        strings.NewReader(bucket),
		IfNoneMatch: aws.String("*"),
	})
	if conditionFailed(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	tags := map[string]string{tagSpaceCreated: time.Now().UTC().Format(duraDateLayout)}
	return true, s.putTags(ctx, bucket, tags)
}

// claimKey is the key, in the store's bucket, of the claim of the space's
// creation.
func (s *Store) claimKey(space string) string { return s.cfg.Prefix + claimPrefix + space }

// duraDeleteSpace deletes the (empty) space's bucket and its claim.
func (s *Store) duraDeleteSpace(ctx context.Context, space string) error {
	_, err := s.client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(s.duraBucket(space))})
	if err == nil || errors.Is(mapErr(err), storage.ErrNotFound) {
		s.deleteKey(ctx, object{bucket: s.cfg.Bucket, key: s.claimKey(space)})
	}
	switch {
	case errors.Is(mapErr(err), storage.ErrNotFound):
		return nil
	case errorCode(err) == "BucketNotEmpty":
		return fmt.Errorf("%w: the bucket still holds object versions: %w", storage.ErrSpaceNotEmpty, err)
	}
	return err
}

// tags reads a space bucket's tags (none is an empty map).
func (s *Store) tags(ctx context.Context, space string) (map[string]string, error) {
	if err := s.duraNeedSpace(ctx, space); err != nil {
		return nil, err
	}
	out, err := s.client.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String(s.duraBucket(space))})
	tags := map[string]string{}
	if errorCode(err) == "NoSuchTagSet" {
		return tags, nil
	}
	if err != nil {
		if errors.Is(mapErr(err), storage.ErrNotFound) {
			return nil, fmt.Errorf("%w: space %q", storage.ErrNotFound, space)
		}
		return nil, err
	}
	for _, t := range out.TagSet {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return tags, nil
}

func (s *Store) putTags(ctx context.Context, bucket string, tags map[string]string) error {
	if len(tags) == 0 {
		_, err := s.client.DeleteBucketTagging(ctx, &s3.DeleteBucketTaggingInput{Bucket: aws.String(bucket)})
		return err
	}
	set := make([]types.Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		set = append(set, types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	_, err := s.client.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String(bucket), Tagging: &types.Tagging{TagSet: set}})
	return err
}

// duraACLs unpacks the space's ACLs from its bucket tags as DuraCloud
// does: "acl-<user>" and "acl-group-<group>" to READ or WRITE, '+' in a
// tag value read as '@'.
func (s *Store) duraACLs(ctx context.Context, space string) (map[string]string, error) {
	tags, err := s.tags(ctx, space)
	if err != nil {
		return nil, err
	}
	acls := map[string]string{}
	for _, t := range duraACLTags {
		for _, name := range strings.Split(tags[t.tag], duraACLDelim) {
			if name != "" {
				acls[t.prefix+strings.ReplaceAll(name, "+", "@")] = t.right
			}
		}
	}
	return acls, nil
}

// duraSetACLs packs the ACLs into the space's bucket tags, keeping its
// other tags (space-created, …).
func (s *Store) duraSetACLs(ctx context.Context, space string, acls map[string]string) error {
	packed := map[string][]string{}
	for name, right := range acls {
		tag, who, err := duraACLEntry(name, right)
		if err != nil {
			return err
		}
		packed[tag] = append(packed[tag], strings.ReplaceAll(who, "@", "+"))
	}
	tags, err := s.tags(ctx, space)
	if err != nil {
		return err
	}
	for _, t := range duraACLTags {
		delete(tags, t.tag)
		if names := packed[t.tag]; len(names) > 0 {
			slices.Sort(names)
			v := strings.Join(names, duraACLDelim) + duraACLDelim
			if utf8.RuneCountInString(v) > 256 {
				return fmt.Errorf("%w: ACL tag %s would be %d characters (S3's limit 256)", storage.ErrPropertiesTooLarge, t.tag, utf8.RuneCountInString(v))
			}
			tags[t.tag] = v
		}
	}
	return s.putTags(ctx, s.duraBucket(space), tags)
}

// duraACLEntry checks one ACL entry and returns its tag and user or group
// name: DuraCloud keeps only "acl-<user>" and "acl-group-<group>" with
// READ or WRITE, in tag values of letters, digits, spaces and "_./=-@".
func duraACLEntry(name, right string) (tag, who string, err error) {
	bad := func(rule string) error {
		return fmt.Errorf("%w: space ACL %s=%s: %s", storage.ErrInvalidProperty, storage.QuoteID(name), storage.QuoteID(right), rule)
	}
	if right != "READ" && right != "WRITE" {
		return "", "", bad("DuraCloud's rights are READ and WRITE")
	}
	prefix, kind := duraACL, "user"
	if strings.HasPrefix(name, duraACLGroup) {
		prefix, kind = duraACLGroup, "group"
	} else if !strings.HasPrefix(name, duraACL) {
		return "", "", bad(`DuraCloud's ACL names are "acl-<user>" and "acl-group-<group>"`)
	}
	who = name[len(prefix):]
	if who == "" {
		return "", "", bad("no " + kind + " name")
	}
	for _, r := range who {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Zs, r) || strings.ContainsRune("_./=-@", r)) {
			return "", "", bad("DuraCloud keeps ACLs in S3 bucket tags: a name of letters, digits, spaces and _./=-@")
		}
	}
	right = strings.ToLower(right)
	return "acl-" + kind + "-" + right, who, nil
}
