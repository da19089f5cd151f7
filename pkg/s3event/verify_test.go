package s3event_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/s3event"
)

func TestConfirm(t *testing.T) {
	at := time.Date(2024, 3, 5, 14, 7, 9, 700e6, time.UTC)
	rec := func(event, version string) s3event.Record {
		return s3event.Record{EventName: event, EventTime: at, Bucket: "b", Key: "p/s/c", VersionID: version}
	}
	obj := func(d time.Duration) *s3event.Object {
		return &s3event.Object{Modified: at.Add(d).Truncate(time.Second)}
	}
	for _, c := range []struct {
		name string
		r    s3event.Record
		cur  *s3event.Object
		want error
	}{
		{"created, exists", rec("ObjectCreated:Put", ""), obj(0), nil},
		{"created, gone since", rec("ObjectCreated:Put", ""), nil, s3event.ErrSuperseded},
		{"removed, gone", rec("ObjectRemoved:Delete", ""), nil, nil},
		{"removed marker, gone", rec("ObjectRemoved:DeleteMarkerCreated", "v2"), nil, nil},
		{"forged removal of a live object", rec("ObjectRemoved:Delete", ""), obj(-time.Hour), s3event.ErrNotConfirmed},
		{"forged removal, store gives no time", rec("ObjectRemoved:Delete", ""), &s3event.Object{}, s3event.ErrNotConfirmed},
		{"removal, then written again later", rec("ObjectRemoved:Delete", ""), obj(3 * time.Second), s3event.ErrSuperseded},
		{"removal, then written again in the same second", rec("ObjectRemoved:Delete", ""), obj(100 * time.Millisecond), s3event.ErrSuperseded},
		{"removal of an older version", rec("ObjectRemoved:Delete", "v1"), obj(-time.Hour), s3event.ErrSuperseded},
		{"other event", rec("ObjectRestore:Completed", ""), nil, nil},
	} {
		err := s3event.Confirm(c.r, c.cur)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: Confirm = %v, want %v", c.name, err, c.want)
		}
		if errors.Is(err, s3event.ErrNotConfirmed) && !strings.Contains(err.Error(), "s3event: not confirmed by HEAD: ObjectRemoved:Delete") {
			t.Errorf("%s: %v does not name the rule", c.name, err)
		}
	}
}
