// Package storage defines the storage provider interface Mill duplicates and
// checks content through, its portable errors and shared helpers.
// Implementations live in sub-packages: s3store (Amazon S3), fsstore (a local
// directory, for tests and the dev mode) and audited (a decorator that puts an
// AUDIT task on the audit queue for every successful write). storagetest is the
// conformance suite every provider passes.
package storage
