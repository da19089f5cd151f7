package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/millfleet/mill/pkg/storage"
)

// Portable reports whether err already is one of storage's errors (or
// more, or a context's end): a provider's error mapping passes it
// unchanged.
func Portable(err error, more ...error) bool {
	for _, e := range []error{storage.ErrNotFound, storage.ErrInvalidID, storage.ErrChecksumMismatch, storage.ErrSpaceNotEmpty, storage.ErrPropertiesTooLarge, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, e) {
			return true
		}
	}
	for _, e := range more {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// MapErr returns a provider's mapping of its service's errors onto
// storage's: nil, and an error that already is one of them (Portable,
// with more), pass unchanged; otherwise kind reads the service's error
// and names the storage error it is (nil: none, it passes unchanged),
// which goes before it, keeping it in the chain.
func MapErr(kind func(error) error, more ...error) func(error) error {
	return func(err error) error {
		if err == nil || Portable(err, more...) {
			return err
		}
		if k := kind(err); k != nil {
			return fmt.Errorf("%w: %w", k, err)
		}
		return err
	}
}

// Wrap returns a provider's error wrapper: "pkg: op key: " before the
// error mapErr maps onto storage's errors; nil stays nil.
func Wrap(pkg string, mapErr func(error) error) func(op, key string, err error) error {
	return func(op, key string, err error) error {
		if err == nil {
			return nil
		}
		return fmt.Errorf("%s: %s %s: %w", pkg, op, storage.QuoteID(key), mapErr(err))
	}
}

// Detached returns a context for cleaning up after ctx, which may have
// ended: ctx's values, no cancellation, at most 30 seconds.
func Detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
}

// MimeOr returns m, or storage.DefaultMimeType when m is "".
func MimeOr(m string) string {
	if m == "" {
		return storage.DefaultMimeType
	}
	return m
}

// RandHex returns 24 random hex digits.
func RandHex() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
