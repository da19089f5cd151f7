package s3event

import (
	"fmt"
	"time"
)

// Object is what a HEAD of an event's object found.
type Object struct {
	// Modified is the object's LastModified (whole seconds on S3); zero
	// when the store does not say.
	Modified time.Time
}

// Confirm checks record r against the current state of its object, as a
// HEAD just read it (docs/ARCHITECTURE.md, Audit) (cur is nil when the HEAD answered 404). It returns
// nil when the event may be acted on, an error wrapping ErrSuperseded
// when it is to be skipped, or one wrapping ErrNotConfirmed when the store
// contradicts it. Event types other than ObjectCreated and ObjectRemoved
// are not checked (nil).
//
// Order: S3 may deliver the events of one key out of order (their
// Sequencer orders them). Confirm does not need the sequencers: it
// compares each event with the object as it is now, so the newest truth
// wins whatever the order of delivery — a late removal of an object
// written again since is superseded, a late creation of an object removed
// since is superseded. A removal event older than the object's
// LastModified, allowing for its whole seconds, is a removal followed by
// a re-creation.
func Confirm(r Record, cur *Object) error {
	switch {
	case r.Created() && cur == nil:
		return fmt.Errorf("%w: %s of s3://%s/%s, but the object is gone (its removal's event follows)", ErrSuperseded, r.EventName, r.Bucket, r.Key)
	case r.Removed() && cur != nil:
		if !cur.Modified.IsZero() && !cur.Modified.Before(r.EventTime.Truncate(time.Second)) {
			return fmt.Errorf("%w: %s of s3://%s/%s at %s, but the object was written again at %s",
				ErrSuperseded, r.EventName, r.Bucket, r.Key, r.EventTime.Format(time.RFC3339Nano), cur.Modified.Format(time.RFC3339))
		}
		if r.VersionID != "" {
			// A versioned bucket: the event removed one version (or
			// added a delete marker that is no longer on top); the
			// current object is another.
			return fmt.Errorf("%w: %s of version %s of s3://%s/%s, but the object exists", ErrSuperseded, r.EventName, r.VersionID, r.Bucket, r.Key)
		}
		return fmt.Errorf("%w: %s of s3://%s/%s at %s, but the object exists (last written %s)",
			ErrNotConfirmed, r.EventName, r.Bucket, r.Key, r.EventTime.Format(time.RFC3339Nano), cur.Modified.Format(time.RFC3339))
	}
	return nil
}
