package s3batch

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	ctltypes "github.com/aws/aws-sdk-go-v2/service/s3control/types"

	"github.com/millfleet/mill/pkg/atrest"
)

// EncodeKey URL-encodes an object key for a CSV manifest: every byte but
// A-Z a-z 0-9 - _ . ~ and / becomes %XX, so a space is %20 and a plus %2B
// and the key reads back the same whether the reader decodes "+" as a
// space (form encoding, as S3 Inventory writes keys) or not.
func EncodeKey(key string) string {
	var b strings.Builder
	const hexd = "0123456789ABCDEF"
	for i := 0; i < len(key); i++ {
		ch := key[i]
		switch {
		case 'a' <= ch && ch <= 'z', 'A' <= ch && ch <= 'Z', '0' <= ch && ch <= '9',
			ch == '-', ch == '_', ch == '.', ch == '~', ch == '/':
			b.WriteByte(ch)
		default:
			b.WriteByte('%')
			b.WriteByte(hexd[ch>>4])
			b.WriteByte(hexd[ch&15])
		}
	}
	return b.String()
}

// DecodeKey reverses the URL encoding of a key in a manifest or a
// completion report ("+" is a space, as in S3's form encoding).
func DecodeKey(s string) (string, error) {
	k, err := url.QueryUnescape(s)
	if err != nil {
		return "", fmt.Errorf("key %q is not URL-encoded: %w", s, err)
	}
	return k, nil
}

// EncodeManifest returns a CSV manifest of objs and its field list:
// Bucket,Key, or Bucket,Key,VersionId when any object names a version
// (the others then have an empty VersionId).
func EncodeManifest(objs []atrest.Object) ([]byte, []ctltypes.JobManifestFieldName) {
	versioned := false
	for _, o := range objs {
		versioned = versioned || o.VersionID != ""
	}
	fields := []ctltypes.JobManifestFieldName{ctltypes.JobManifestFieldNameBucket, ctltypes.JobManifestFieldNameKey}
	if versioned {
		fields = append(fields, ctltypes.JobManifestFieldNameVersionId)
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	for _, o := range objs {
		rec := []string{o.Bucket, EncodeKey(o.Key)}
		if versioned {
			rec = append(rec, o.VersionID)
		}
		_ = w.Write(rec) // a bytes.Buffer does not fail
	}
	w.Flush()
	return buf.Bytes(), fields
}

// DecodeManifest reads a CSV manifest with the given fields.
func DecodeManifest(r io.Reader, fields []ctltypes.JobManifestFieldName) ([]atrest.Object, error) {
	want := []ctltypes.JobManifestFieldName{ctltypes.JobManifestFieldNameBucket, ctltypes.JobManifestFieldNameKey}
	if len(fields) == 3 {
		want = append(want, ctltypes.JobManifestFieldNameVersionId)
	}
	if len(fields) != len(want) {
		return nil, fmt.Errorf("manifest fields %v: want Bucket,Key[,VersionId]", fields)
	}
	for i := range want {
		if fields[i] != want[i] {
			return nil, fmt.Errorf("manifest fields %v: want Bucket,Key[,VersionId]", fields)
		}
	}
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(fields)
	var objs []atrest.Object
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("manifest: %w", err)
		}
		key, err := DecodeKey(rec[1])
		if err != nil {
			return nil, fmt.Errorf("manifest line %d: %w", line, err)
		}
		o := atrest.Object{Bucket: rec[0], Key: key}
		if len(rec) == 3 {
			o.VersionID = rec[2]
		}
		if o.Bucket == "" || o.Key == "" {
			return nil, fmt.Errorf("manifest line %d: no bucket or key", line)
		}
		objs = append(objs, o)
	}
	return objs, nil
}
