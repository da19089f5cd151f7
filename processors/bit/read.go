package bit

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/storage"
)

// Reading an item's bytes (C). storage.Open reads a big item with
// Transfer.Streams ranged reads in flight, hashed in order (MD5 and
// CRC64NVME, once per byte) while the next parts arrive. With Checkpoints
// set, a check of an item of at least ResumeMinSize saves its progress —
// the item's revision, the offset and the hash state — every
// CheckpointEvery bytes, so a redelivered task or another worker after a
// crash reads on from there instead of from byte 0 (see
// docs/ARCHITECTURE.md, Transfers); a smaller item's check makes no
// checkpoint request at all (see read). A checkpoint is used only for the
// same revision and size of the item, with a well-formed hash state of
// exactly the bytes before its offset; the resumed reads are conditional
// on the revision (a rewritten item starts over).

// Defaults of the resumable read.
const (
	DefaultResumeMinSize   = 256 << 20
	DefaultCheckpointEvery = 1 << 30
)

type readCheckpoint struct {
	V        int    `json:"v"`
	Revision string `json:"revision"`
	Size     int64  `json:"size"`
	Offset   int64  `json:"offset"`
	Sums     []byte `json:"sums"`
}

// reread reads the item whole again, from byte 0, over new connections
// and pinned to revision (storage.Reopen; "" when the provider has none),
// into new sums: the second read of a check whose first one disagreed
// (see observe.go). No checkpoint is used or kept.
func (ob *Observer) reread(ctx context.Context, prov storage.Provider, space, id, revision string) (*storage.Info, *storage.Sums, error) {
	t := ob.Transfer.WithDefaults()
	rc, info, err := storage.Reopen(ctx, prov, space, id, revision, t)
	if err != nil {
		return nil, nil, err
	}
	defer rc.Close()
	sums := storage.NewSums()
	if _, err := storage.ReadAll(ctx, rc, info.Size, t, sums); err != nil {
		if _, err := ob.readOn(ctx, prov, space, id, info, sums, sums, t, err); err != nil {
			return nil, nil, err
		}
	}
	return info, sums, nil
}

// read reads the item whole into sums and returns its Info; resumeKey ""
// keeps no checkpoint. The item is opened first, so its size comes from
// the response of its first ranged GET: an item below ResumeMinSize costs
// that GET (and the stream of the rest) and no checkpoint request at all —
// no load, save or delete. A big item's checkpoint is loaded then, and
// when one holds for the revision and size just seen, the item is opened
// again at its offset (the first response is dropped unread).
func (ob *Observer) read(ctx context.Context, prov storage.Provider, space, id, resumeKey string) (*storage.Info, *storage.Sums, error) {
	t := ob.Transfer.WithDefaults()
	cps := ob.Checkpoints
	minSize, every := ob.ResumeMinSize, ob.CheckpointEvery
	if minSize <= 0 {
		minSize = DefaultResumeMinSize
	}
	if every <= 0 {
		every = DefaultCheckpointEvery
	}
	rc, info, err := storage.Open(ctx, prov, space, id, t)
	if err != nil {
		return nil, nil, err
	}
	defer func() { rc.Close() }()
	if cps == nil || info.Size < minSize {
		resumeKey = ""
	}
	sums := storage.NewSums()
	if resumeKey != "" {
		if rrc, rinfo, rsums := ob.resume(ctx, prov, space, id, resumeKey, info, t); rrc != nil {
			rc.Close()
			rc, info, sums = rrc, rinfo, rsums
		}
	}
	var w io.Writer = sums
	if resumeKey != "" && info.Revision != "" {
		w = &checkpointing{ctx: ctx, cps: cps, key: resumeKey, sums: sums, every: every, last: sums.Len(),
			cp: readCheckpoint{V: 1, Revision: info.Revision, Size: info.Size}}
	}
	if _, err := storage.ReadAll(ctx, rc, info.Size-sums.Len(), t, w); err != nil {
		if _, err := ob.readOn(ctx, prov, space, id, info, sums, w, t, err); err != nil {
			return nil, nil, err
		}
	}
	if resumeKey != "" {
		_ = cps.Delete(context.WithoutCancel(ctx), resumeKey)
	}
	return info, sums, nil
}

// resume opens the item where its checkpoint left off, or returns a nil
// reader (read on from 0) when there is none that holds for the item as
// opened (cur).
func (ob *Observer) resume(ctx context.Context, prov storage.Provider, space, id, key string, cur *storage.Info, t storage.Transfer) (io.ReadCloser, *storage.Info, *storage.Sums) {
	b, err := ob.Checkpoints.Get(ctx, key)
	if err != nil {
		return nil, nil, nil
	}
	var cp readCheckpoint
	sums := storage.NewSums()
	if json.Unmarshal(b, &cp) != nil || cp.V != 1 || cp.Revision == "" || cp.Offset <= 0 || cp.Offset > cp.Size ||
		cp.Revision != cur.Revision || cp.Size != cur.Size ||
		sums.UnmarshalBinary(cp.Sums) != nil || sums.Len() != cp.Offset {
		return nil, nil, nil
	}
	rc, info, err := storage.OpenAt(ctx, prov, space, id, cp.Offset, cp.Revision, t)
	if err != nil || info.Size != cp.Size || info.Revision != cp.Revision {
		if rc != nil {
			rc.Close()
		}
		return nil, nil, nil
	}
	return rc, info, sums
}

// checkpointing hashes what is written and saves a checkpoint every
// `every` bytes.
type checkpointing struct {
	ctx   context.Context
	cps   blob.Store
	key   string
	sums  *storage.Sums
	every int64
	last  int64
	cp    readCheckpoint
}

func (c *checkpointing) Write(p []byte) (int, error) {
	n, _ := c.sums.Write(p)
	if c.sums.Len()-c.last >= c.every && c.sums.Len() < c.cp.Size {
		st, err := c.sums.MarshalBinary()
		if err != nil {
			return n, err
		}
		c.cp.Offset, c.cp.Sums = c.sums.Len(), st
		b, err := json.Marshal(c.cp)
		if err != nil {
			return n, err
		}
		// A failed save costs only a longer re-read after a crash.
		if err := c.cps.Put(c.ctx, c.key, b); err == nil || errors.Is(err, context.Canceled) {
			c.last = c.sums.Len()
		}
	}
	return n, nil
}
