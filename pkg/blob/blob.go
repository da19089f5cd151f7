package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Store keeps blobs under keys (see the package comment for the contract).
// Implementations are safe for concurrent use.
type Store interface {
	// Get returns the blob's bytes; an error wrapping ErrNotFound when
	// there is none, ErrTooLarge when it is over the store's bound.
	Get(ctx context.Context, key string) ([]byte, error)
	// Put writes data whole under key, replacing any blob there.
	Put(ctx context.Context, key string, data []byte) error
	// Delete removes the blobs of keys; missing ones are success.
	Delete(ctx context.Context, keys ...string) error
	// List returns the keys that begin with prefix, sorted.
	List(ctx context.Context, prefix string) ([]string, error)
}

var (
	// ErrNotFound is Get's error for a key with no blob.
	ErrNotFound = errors.New("blob not found")
	// ErrTooLarge is Get's error for a blob over the store's size bound.
	ErrTooLarge = errors.New("blob too large")
	// ErrInvalidKey is every operation's error for a key CheckKey refuses.
	ErrInvalidKey = errors.New("invalid blob key")
)

// MaxKeyLen is the longest key CheckKey accepts.
const MaxKeyLen = 512

// CheckKey checks that key is one a Store accepts: non-empty path elements
// of A-Z a-z 0-9 . _ - separated by "/", none "." or "..", at most
// MaxKeyLen bytes. The error wraps ErrInvalidKey.
func CheckKey(key string) error {
	if key == "" || len(key) > MaxKeyLen {
		return fmt.Errorf("%w %q: empty or longer than %d bytes", ErrInvalidKey, key, MaxKeyLen)
	}
	for _, el := range strings.Split(key, "/") {
		if el == "" || el == "." || el == ".." || strings.IndexFunc(el, badKeyRune) >= 0 {
			return fmt.Errorf("%w %q: want path elements of A-Z a-z 0-9 . _ -", ErrInvalidKey, key)
		}
	}
	return nil
}

func badKeyRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
}

// CheckKeys checks every key (CheckKey).
func CheckKeys(keys []string) error {
	for _, k := range keys {
		if err := CheckKey(k); err != nil {
			return err
		}
	}
	return nil
}

// ReadAll reads r to its end for the blob at where (named in errors),
// refusing more than max bytes (0: no bound) with an error wrapping
// ErrTooLarge after reading at most max+1. Implementations read through it.
func ReadAll(r io.Reader, where string, max int64) ([]byte, error) {
	if max > 0 {
		r = io.LimitReader(r, max+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", where, err)
	}
	if max > 0 && int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w: over %d bytes", where, ErrTooLarge, max)
	}
	return b, nil
}

// Options are what a Store is made with; nil means the zero value.
type Options struct {
	// MaxSize bounds the blobs Get returns (ErrTooLarge above it); 0
	// means no bound.
	MaxSize int64
}

// Max returns o's MaxSize (0 for nil).
func (o *Options) Max() int64 {
	if o == nil {
		return 0
	}
	return o.MaxSize
}
