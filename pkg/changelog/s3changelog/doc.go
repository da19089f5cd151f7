// Package s3changelog is the changelog.Log in S3: one object per entry,
// written with If-None-Match: * so an entry is never replaced.
package s3changelog
