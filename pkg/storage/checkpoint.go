package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
)

// Checkpoints keeps the progress of long transfers so that they survive a
// crash, a redelivery or a continuation (see docs/ARCHITECTURE.md,
// Transfers). Keys are CheckpointKey values. Implementations: an S3
// prefix of the state bucket (s3store.Checkpoints), memory (tests).
type Checkpoints interface {
	// Load returns the checkpoint saved under key, ErrNotFound when none.
	Load(ctx context.Context, key string) ([]byte, error)
	// Save replaces the checkpoint under key.
	Save(ctx context.Context, key string, b []byte) error
	// Delete removes it; none is success.
	Delete(ctx context.Context, key string) error
}

// CheckpointKey names the checkpoint of one task's transfer: kind (such as
// "dup" or "bit") and the SHA-256 of the task's identity fields, so any
// content ID makes a short, safe key.
func CheckpointKey(kind string, fields ...string) string {
	h := sha256.New()
	for _, f := range fields {
		fmt.Fprintf(h, "%d:%s;", len(f), f)
	}
	return kind + "/" + hex.EncodeToString(h.Sum(nil))
}

// Resume makes a Put resumable (PutOptions.Resume).
type Resume struct {
	// Checkpoints is where the progress is kept (required).
	Checkpoints Checkpoints
	// Key names the transfer (CheckpointKey of the task).
	Key string
	// Source identifies the bytes being written (the source item's
	// revision, size and MD5): a checkpoint of other bytes is not resumed
	// but discarded, and its upload aborted.
	Source string
	// MinSize: smaller writes keep no checkpoint (0: every multipart one).
	MinSize int64
	// Stop, when closed, makes the write stop at its next checkpoint and
	// fail with ErrSuspended, keeping the checkpoint (a continuation).
	Stop <-chan struct{}
}

// MemoryCheckpoints is Checkpoints in memory, for tests and the dev mode.
type MemoryCheckpoints struct {
	mu sync.Mutex
	m  map[string][]byte
	// Saves counts Save calls.
	Saves int
}

// Load implements Checkpoints.
func (c *MemoryCheckpoints) Load(_ context.Context, key string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[key]
	if !ok {
		return nil, fmt.Errorf("%w: checkpoint %s", ErrNotFound, key)
	}
	return append([]byte(nil), b...), nil
}

// Save implements Checkpoints.
func (c *MemoryCheckpoints) Save(_ context.Context, key string, b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string][]byte{}
	}
	c.m[key] = append([]byte(nil), b...)
	c.Saves++
	return nil
}

// Delete implements Checkpoints.
func (c *MemoryCheckpoints) Delete(_ context.Context, key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
	return nil
}

// Keys lists the saved keys with the given prefix.
func (c *MemoryCheckpoints) Keys(prefix string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k := range c.m {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}
