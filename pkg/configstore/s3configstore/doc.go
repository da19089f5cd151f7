// Package s3configstore is the configstore.Store in an S3 bucket (the
// config bucket): conditional writes are S3's own (If-Match,
// If-None-Match), history is the bucket's object versions, and who made a
// version travels as its user metadata.
package s3configstore
