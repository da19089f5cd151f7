package s3event

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Record is one record of a notification.
type Record struct {
	// EventName is S3's, without the "s3:" prefix: "ObjectCreated:Put",
	// "ObjectRemoved:Delete", …
	EventName string
	EventTime time.Time
	Bucket    string
	// Key is the object key, URL-decoded.
	Key       string
	Size      int64
	ETag      string
	VersionID string
	// Sequencer orders events of one key (hex, compare as equal-length
	// strings).
	Sequencer string
	// PrincipalID is who made the request, as the event says (unverified:
	// see UserID).
	PrincipalID string
}

// UserPrefix begins the audit log user of every entry made from an S3 event
// (Record.UserID).
const UserPrefix = "s3-event:"

// maxPrincipal bounds the principal kept in Record.UserID, in bytes.
const maxPrincipal = 128

// UserID is the audit log user of an entry made from r. The principal is
// what the event says made the request, and anyone who can send to the
// audit queue can write an event: it is not verified (a HEAD does not say
// who wrote an object). So it is recorded as the event's claim — UserPrefix
// and the principal, its bytes outside printable ASCII replaced by '?', at
// most 128 of them; "unknown" when there is none — and can never read as a
// DuraStore user or Mill's own processors ("mill-biterror", …).
func (r Record) UserID() string {
	p := r.PrincipalID
	if p == "" {
		return UserPrefix + "unknown"
	}
	if len(p) > maxPrincipal {
		p = p[:maxPrincipal]
	}
	b := []byte(p)
	for i, c := range b {
		if c < 0x21 || c > 0x7e {
			b[i] = '?'
		}
	}
	return UserPrefix + string(b)
}

// Created reports an ObjectCreated event.
func (r Record) Created() bool { return strings.HasPrefix(r.EventName, "ObjectCreated:") }

// Removed reports an ObjectRemoved event.
func (r Record) Removed() bool { return strings.HasPrefix(r.EventName, "ObjectRemoved:") }

type wire struct {
	Records []struct {
		EventSource  string `json:"eventSource"`
		EventName    string `json:"eventName"`
		EventTime    string `json:"eventTime"`
		UserIdentity struct {
			PrincipalID string `json:"principalId"`
		} `json:"userIdentity"`
		S3 struct {
			Bucket struct {
				Name string `json:"name"`
			} `json:"bucket"`
			Object struct {
				Key       string `json:"key"`
				Size      int64  `json:"size"`
				ETag      string `json:"eTag"`
				VersionID string `json:"versionId"`
				Sequencer string `json:"sequencer"`
			} `json:"object"`
		} `json:"s3"`
	} `json:"Records"`
}

// Parse reads an S3 event notification body. Every record must come from
// aws:s3 and name a bucket, a key and a time.
func Parse(body []byte) ([]Record, error) {
	var w wire
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if len(w.Records) == 0 {
		return nil, fmt.Errorf("%w: no Records", ErrMalformed)
	}
	out := make([]Record, 0, len(w.Records))
	for i, r := range w.Records {
		bad := func(msg string, args ...any) error {
			return fmt.Errorf("%w: record %d: %s", ErrMalformed, i, fmt.Sprintf(msg, args...))
		}
		if r.EventSource != "aws:s3" {
			return nil, bad("eventSource %q, want aws:s3", r.EventSource)
		}
		if r.S3.Bucket.Name == "" || r.S3.Object.Key == "" {
			return nil, bad("no bucket or key")
		}
		// S3 encodes keys like a form value: %XX escapes and '+' for space.
		key, err := url.QueryUnescape(r.S3.Object.Key)
		if err != nil {
			return nil, bad("key %q: %v", r.S3.Object.Key, err)
		}
		at, err := time.Parse(time.RFC3339Nano, r.EventTime)
		if err != nil {
			return nil, bad("eventTime %q: %v", r.EventTime, err)
		}
		out = append(out, Record{
			EventName: strings.TrimPrefix(r.EventName, "s3:"), EventTime: at.UTC(),
			Bucket: r.S3.Bucket.Name, Key: key, Size: r.S3.Object.Size,
			ETag: strings.Trim(r.S3.Object.ETag, `"`), VersionID: r.S3.Object.VersionID,
			Sequencer: r.S3.Object.Sequencer, PrincipalID: r.UserIdentity.PrincipalID,
		})
	}
	return out, nil
}
