package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/millfleet/mill/pkg/blob"
)

// MaxCheckpoint bounds the transfer checkpoints a store reads back
// (10 000 parts take about 700 KB): the blob.Store that keeps them is made
// with it (s3store.NewCheckpoints).
const MaxCheckpoint = 8 << 20

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
	// Checkpoints is where the progress is kept (required): a blob.Store,
	// in Mill a prefix of the state bucket, whose lifecycle rule expires
	// what no task came back for (millctl setup). A missing checkpoint is
	// blob.ErrNotFound.
	Checkpoints blob.Store
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
