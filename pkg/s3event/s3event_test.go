package s3event_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/s3event"
	"github.com/millfleet/mill/pkg/stores"
)

const body = `{"Records":[
 {"eventVersion":"2.1","eventSource":"aws:s3","awsRegion":"us-east-1","eventTime":"2024-03-05T14:07:09.123Z",
  "eventName":"ObjectCreated:Put","userIdentity":{"principalId":"AWS:AIDA1"},
  "s3":{"bucket":{"name":"acct1-primary"},"object":{"key":"photos/dir/%C3%9Cn%C3%AF+file%2B1.txt","size":5,"eTag":"\"0cc175b9c0f1b6a831c399e269772661\"","sequencer":"0A1B"}}},
 {"eventVersion":"2.1","eventSource":"aws:s3","eventTime":"2024-03-05T14:07:10Z",
  "eventName":"ObjectRemoved:Delete","s3":{"bucket":{"name":"acct1-primary"},"object":{"key":"photos/x"}}}]}`

func TestParse(t *testing.T) {
	recs, err := s3event.Parse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if r.Key != "photos/dir/Ünï file+1.txt" || r.Bucket != "acct1-primary" || r.Size != 5 ||
		r.ETag != "0cc175b9c0f1b6a831c399e269772661" || !r.Created() || r.Removed() || r.PrincipalID != "AWS:AIDA1" ||
		!r.EventTime.Equal(time.Date(2024, 3, 5, 14, 7, 9, 123e6, time.UTC)) {
		t.Fatalf("record 0 = %+v", r)
	}
	if !recs[1].Removed() || recs[1].Created() {
		t.Fatalf("record 1 = %+v", recs[1])
	}
	for _, bad := range []string{`{}`, `{"Records":[{"eventSource":"aws:sqs"}]}`, `{"Records":[{"eventSource":"aws:s3","eventTime":"x","s3":{"bucket":{"name":"b"},"object":{"key":"k"}}}]}`, `nope`} {
		if _, err := s3event.Parse([]byte(bad)); !errors.Is(err, s3event.ErrMalformed) {
			t.Errorf("Parse(%s) = %v, want ErrMalformed", bad, err)
		}
	}
}

func TestRegistryResolver(t *testing.T) {
	reg, err := stores.Parse("accounts.json", []byte(`{"accounts":[
	 {"id":"acct1","status":"active","stores":[
	   {"id":"1","primary":true,"kind":"s3","bucket":"shared","prefix":"data/","region":"us-east-1"},
	   {"id":"2","kind":"s3","bucket":"shared","prefix":"mill/","region":"us-east-1"}]},
	 {"id":"acct2","status":"active","stores":[
	   {"id":"9","primary":true,"kind":"s3","bucket":"other","prefix":"p/","region":"us-east-1"}]},
	 {"id":"dura","status":"active","stores":[
	   {"id":"1","primary":true,"kind":"s3","layout":"duracloud","accountPrefix":"AKIAIOSFODNN7EXAMPLE","bucket":"books","region":"us-east-1"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r := s3event.RegistryResolver{Registry: reg}
	for _, c := range []struct {
		bucket, key string
		want        s3event.Location
		err         error
	}{
		{"shared", "data/photos/a/b.txt", s3event.Location{"acct1", "1", "photos", "a/b.txt"}, nil},
		{"shared", "mill/docs/x", s3event.Location{"acct1", "2", "docs", "x"}, nil}, // the store of the prefix
		{"other", "p/s/c", s3event.Location{"acct2", "9", "s", "c"}, nil},
		{"other", "p/s", s3event.Location{}, s3event.ErrIgnored},                 // space marker
		{"shared", "data/.mill-tmp/abc", s3event.Location{}, s3event.ErrIgnored}, // reserved
		{"shared", "mill/.mill-tmp/abc", s3event.Location{}, s3event.ErrIgnored}, // reserved under a prefix
		{"other", "q/s/c", s3event.Location{}, s3event.ErrIgnored},               // outside the prefix
		{"other", "p/s/", s3event.Location{}, s3event.ErrIgnored},                // empty content ID
		{"nobody", "s/c", s3event.Location{}, s3event.ErrUnknownBucket},
		// DuraCloud's layout: the bucket is the space, the key the item.
		{"akiaiosfodnn7example.photos", "2024/a b.jpg", s3event.Location{"dura", "1", "photos", "2024/a b.jpg"}, nil},
		{"akiaiosfodnn7example.photos", "../x", s3event.Location{"dura", "1", "photos", "../x"}, nil},
		{"akiaiosfodnn7example.9lives", "a", s3event.Location{}, s3event.ErrIgnored},              // no DuraCloud space ID
		{"akiaiosfodnn7example.photos.", "a", s3event.Location{}, s3event.ErrIgnored},             // another space's bucket
		{"hidden-akiaiosfodnn7example.photos", "a", s3event.Location{}, s3event.ErrUnknownBucket}, // a hidden space
		{"books", "photos/a", s3event.Location{}, s3event.ErrIgnored},                             // Mill's bookkeeping
		{"books", ".mill-trash/photos/x", s3event.Location{}, s3event.ErrIgnored},
		{"otherprefix000000000.photos", "a", s3event.Location{}, s3event.ErrUnknownBucket}, // another account prefix
	} {
		got, err := r.Resolve(c.bucket, c.key)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("Resolve(%s, %s) err = %v, want %v", c.bucket, c.key, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Resolve(%s, %s) = %+v, %v; want %+v", c.bucket, c.key, got, err, c.want)
		}
	}
}

func TestQueuePolicy(t *testing.T) {
	p, err := s3event.QueuePolicy("arn:aws:sqs:us-east-1:123456789012:mill-audit", "123456789012", "b1", "b2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"s3.amazonaws.com"`, `"arn:aws:s3:::b1"`, `"arn:aws:s3:::b2"`, `"sqs:SendMessage"`, `"aws:SourceAccount":"123456789012"`} {
		if !strings.Contains(p, want) {
			t.Errorf("policy lacks %s: %s", want, p)
		}
	}
}

// TestUserIDIsTheEventsClaim: the principal of an event, which a forger
// sets, is recorded marked as the event's claim, printable and bounded;
// it can never read as Mill's own user or a plain DuraStore user.
func TestUserIDIsTheEventsClaim(t *testing.T) {
	for principal, want := range map[string]string{
		"AWS:AIDA1":                     "s3-event:AWS:AIDA1",
		"":                              "s3-event:unknown",
		"mill-biterror":                 "s3-event:mill-biterror",
		"ana\n2024 admin deleted\u202e": "s3-event:ana?2024?admin?deleted???",
		strings.Repeat("x", 1000):       "s3-event:" + strings.Repeat("x", 128),
	} {
		if got := (s3event.Record{PrincipalID: principal}).UserID(); got != want {
			t.Errorf("UserID of principal %q = %q, want %q", principal, got, want)
		}
	}
}
