package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// ErrNotFound reports that an account has no policy file.
var ErrNotFound = errors.New("policy: not found")

// MaxFileSize is the largest policy file or duplication-accounts.json read
// (4 MiB, room for tens of thousands of listed spaces). A larger file is
// refused with an error wrapping jsonpos.ErrTooLarge before it is read
// whole.
const MaxFileSize = 4 << 20

// Repository is where the policy files live.
//
// Accounts returns the accounts of duplication-accounts.json (none when the
// file does not exist). Policy returns an account's parsed policy file
// (listed or not: InForce says whether it applies), or an error wrapping
// ErrNotFound. Put validates and writes an account's policy and adds the
// account to duplication-accounts.json; Delete removes both (deleting what
// is absent is success). Implementations are safe for concurrent use; the
// files are small and written whole.
type Repository interface {
	Reader
	Put(ctx context.Context, account string, p *Policy) error
	Delete(ctx context.Context, account string) error
}

// blobs reads and writes whole named files.
type blobs interface {
	read(ctx context.Context, name string) ([]byte, error) // ErrNotFound when absent
	write(ctx context.Context, name string, data []byte) error
	remove(ctx context.Context, name string) error // absent is success
	where(name string) string                      // for errors and logs
}

// Files is a Repository over a directory or a bucket.
type Files struct{ b blobs }

var _ Repository = (*Files)(nil)

// NewDir returns a repository over the local directory dir.
func NewDir(dir string) *Files { return &Files{b: dirBlobs{dir: dir}} }

// NewS3 returns a repository over bucket; files are stored under prefix
// (for example "policies/"; "" for the bucket's root).
func NewS3(client *s3.Client, bucket, prefix string) *Files {
	return &Files{b: s3Blobs{c: client, bucket: bucket, prefix: prefix}}
}

// Accounts implements Repository.
func (f *Files) Accounts(ctx context.Context) ([]string, error) {
	data, err := f.b.read(ctx, AccountsFile)
	if errors.Is(err, ErrNotFound) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseAccounts(f.b.where(AccountsFile), data)
}

// Policy implements Repository.
func (f *Files) Policy(ctx context.Context, account string) (*Policy, error) {
	if err := checkAccount(account); err != nil {
		return nil, err
	}
	name := FileName(account)
	data, err := f.b.read(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("policy: account %q: %w", account, err)
	}
	return Parse(f.b.where(name), data)
}

// Put implements Repository: the policy is validated and written first,
// then the account is added to the account list.
func (f *Files) Put(ctx context.Context, account string, p *Policy) error {
	if err := checkAccount(account); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("policy: account %q: %w", account, err)
	}
	data, err := p.Marshal()
	if err != nil {
		return err
	}
	if err := f.b.write(ctx, FileName(account), data); err != nil {
		return err
	}
	accts, err := f.Accounts(ctx)
	if err != nil {
		return err
	}
	if slices.Contains(accts, account) {
		return nil
	}
	return f.writeAccounts(ctx, append(accts, account))
}

// Delete implements Repository: the account leaves the list first, so no
// producer reads a listed account without a policy.
func (f *Files) Delete(ctx context.Context, account string) error {
	if err := checkAccount(account); err != nil {
		return err
	}
	accts, err := f.Accounts(ctx)
	if err != nil {
		return err
	}
	if i := slices.Index(accts, account); i >= 0 {
		if err := f.writeAccounts(ctx, slices.Delete(accts, i, i+1)); err != nil {
			return err
		}
	}
	return f.b.remove(ctx, FileName(account))
}

func (f *Files) writeAccounts(ctx context.Context, accts []string) error {
	data, err := MarshalAccounts(accts)
	if err != nil {
		return err
	}
	return f.b.write(ctx, AccountsFile, data)
}

func checkAccount(a string) error {
	if a == "" || strings.ContainsAny(a, "/\\\x00") || a == "." || a == ".." {
		return fmt.Errorf("policy: invalid account id %q", a)
	}
	return nil
}

type dirBlobs struct{ dir string }

func (d dirBlobs) where(name string) string { return filepath.Join(d.dir, name) }

func (d dirBlobs) read(_ context.Context, name string) ([]byte, error) {
	f, err := os.Open(d.where(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", d.where(name), ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > MaxFileSize {
		return nil, jsonpos.TooLarge(d.where(name), MaxFileSize)
	}
	return jsonpos.ReadAll(d.where(name), f, MaxFileSize)
}

// write replaces the file atomically (temporary file, then rename).
func (d dirBlobs) write(_ context.Context, name string, data []byte) error {
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	tmp, err := os.CreateTemp(d.dir, "."+name+".*")
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("policy: write %s: %w", d.where(name), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("policy: write %s: %w", d.where(name), err)
	}
	if err := os.Rename(tmp.Name(), d.where(name)); err != nil {
		return fmt.Errorf("policy: write %s: %w", d.where(name), err)
	}
	return nil
}

func (d dirBlobs) remove(_ context.Context, name string) error {
	err := os.Remove(d.where(name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("policy: %w", err)
	}
	return nil
}

type s3Blobs struct {
	c              *s3.Client
	bucket, prefix string
}

func (s s3Blobs) key(name string) string   { return s.prefix + name }
func (s s3Blobs) where(name string) string { return "s3://" + s.bucket + "/" + s.key(name) }

func (s s3Blobs) read(ctx context.Context, name string) ([]byte, error) {
	out, err := s.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.key(name))}, awsconfig.ReadWhole)
	if err != nil {
		if isS3NotFound(err) {
			return nil, fmt.Errorf("%s: %w", s.where(name), ErrNotFound)
		}
		return nil, fmt.Errorf("policy: get %s: %w", s.where(name), err)
	}
	defer out.Body.Close()
	if aws.ToInt64(out.ContentLength) > MaxFileSize {
		return nil, jsonpos.TooLarge(s.where(name), MaxFileSize)
	}
	b, err := jsonpos.ReadAll(s.where(name), out.Body, MaxFileSize)
	if err != nil && !errors.Is(err, jsonpos.ErrTooLarge) {
		return nil, fmt.Errorf("policy: get %w", err)
	}
	return b, err
}

func (s s3Blobs) write(ctx context.Context, name string, data []byte) error {
	_, err := s.c.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(s.key(name)),
		Body: bytes.NewReader(data), ContentType: aws.String("application/json"),
	})
	if err != nil {
		return fmt.Errorf("policy: put %s: %w", s.where(name), err)
	}
	return nil
}

func (s s3Blobs) remove(ctx context.Context, name string) error {
	_, err := s.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.key(name))})
	if err != nil && !isS3NotFound(err) {
		return fmt.Errorf("policy: delete %s: %w", s.where(name), err)
	}
	return nil
}

func isS3NotFound(err error) bool {
	var nk *s3types.NoSuchKey
	if errors.As(err, &nk) {
		return true
	}
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound")
}
