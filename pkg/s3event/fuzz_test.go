package s3event_test

import (
	"errors"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/s3event"
	"github.com/millfleet/mill/pkg/storage"
)

// FuzzParse feeds arbitrary bodies to Parse: it never panics, every error
// wraps ErrMalformed, and every record it accepts names a bucket and a key,
// with its time in UTC.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"Records":[{"eventSource":"aws:s3","eventName":"ObjectCreated:Put","eventTime":"2024-01-02T03:04:05.678Z",` +
			`"s3":{"bucket":{"name":"b"},"object":{"key":"p/space/a+b%2Fc","size":3,"eTag":"\"x\"","sequencer":"0A"}}}]}`,
		`{"Records":[{"eventSource":"aws:s3","eventName":"s3:ObjectRemoved:Delete","eventTime":"2024-01-02T03:04:05Z",` +
			`"s3":{"bucket":{"name":"b"},"object":{"key":"%zz"}}}]}`,
		`{"Records":[]}`, `{"Records":null}`, `{"Service":"Amazon S3","Event":"s3:TestEvent"}`,
		`{"Records":[{"eventSource":"aws:sqs"}]}`, `[]`, `{`, ``, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		recs, err := s3event.Parse(body)
		if err != nil {
			if !errors.Is(err, s3event.ErrMalformed) {
				t.Fatalf("Parse(%q): error %v does not wrap ErrMalformed", body, err)
			}
			return
		}
		if len(recs) == 0 {
			t.Fatalf("Parse(%q) accepted a notification without records", body)
		}
		for i, r := range recs {
			if r.Bucket == "" || r.Key == "" || r.EventTime.Location() != time.UTC {
				t.Fatalf("Parse(%q): record %d has no bucket or key, or a non-UTC time: %+v", body, i, r)
			}
			if r.Created() && r.Removed() {
				t.Fatalf("record %d is both created and removed: %q", i, r.EventName)
			}
		}
	})
}

// FuzzSplit checks the key → item mapping: an accepted key yields a valid
// space and content ID and is exactly prefix + space + "/" + content; every
// refusal wraps ErrIgnored.
func FuzzSplit(f *testing.F) {
	for _, k := range [][2]string{
		{"p/", "p/space/a/b.txt"}, {"", "space/x"}, {"p/", "p/space"}, {"p/", "p/.mill-space/x"},
		{"p/", "p/space/../../etc/passwd"}, {"p/", "q/space/x"}, {"", "s/\x00"}, {"", "s/"},
	} {
		f.Add(k[0], k[1])
	}
	f.Fuzz(func(t *testing.T, prefix, key string) {
		loc, err := s3event.Split("acct", "store", prefix, key)
		if err != nil {
			if !errors.Is(err, s3event.ErrIgnored) {
				t.Fatalf("Split(%q, %q): error %v does not wrap ErrIgnored", prefix, key, err)
			}
			return
		}
		if err := storage.ValidateSpaceID(loc.SpaceID); err != nil {
			t.Fatalf("Split(%q, %q) = %+v: %v", prefix, key, loc, err)
		}
		if err := storage.ValidateContentID(loc.ContentID); err != nil {
			t.Fatalf("Split(%q, %q) = %+v: %v", prefix, key, loc, err)
		}
		if prefix+loc.SpaceID+"/"+loc.ContentID != key || loc.Account != "acct" || loc.StoreID != "store" {
			t.Fatalf("Split(%q, %q) = %+v does not rebuild the key", prefix, key, loc)
		}
	})
}
