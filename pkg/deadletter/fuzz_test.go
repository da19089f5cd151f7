package deadletter

import (
	"bytes"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/queue"
)

// FuzzDecode feeds arbitrary dead-letter-queue messages (body and
// form attribute) to Decode: it never panics, and whatever the
// original body, a dead letter encoded by Encode (or its raw
// form) decodes back to the same body and metadata.
func FuzzDecode(f *testing.F) {
	sample, _ := Encode(&Letter{Body: []byte(`{"v":1,"type":"NOOP","props":{}}`), Reason: ReasonFailed,
		Error: "boom", TaskType: "NOOP", SourceQueue: "mill-audit", Attempts: 3, Worker: "w", Time: time.Unix(1, 0)})
	f.Add(sample.Body, "", "")
	f.Add([]byte(`{"mill_dead_letter":1,"body_base64":"!!"}`), "", "")
	f.Add([]byte(`{"mill_dead_letter":2}`), "", "")
	f.Add([]byte(`{"mill_dead_letter":1,"time":"x"}`), "", "")
	f.Add([]byte("type=NOOP\n"), FormRaw, "7")
	f.Add([]byte{0xff, 0x00}, FormEnvelope, "-1")
	f.Fuzz(func(t *testing.T, body []byte, form, attempts string) {
		m := &queue.Message{ID: "m", Body: body, Attributes: map[string]string{AttrForm: form, AttrAttempts: attempts, AttrTime: attempts}}
		if d, err := Decode(m); err == nil && d.Body == nil {
			t.Fatalf("Decode(%q, form %q) returned a nil body", body, form)
		}

		want := &Letter{Body: body, Reason: ReasonUndecodable, Error: attempts, SourceQueue: "q", Attempts: 2,
			Worker: "w", Time: time.Unix(1700000000, 5).UTC(), MessageID: "id"}
		e, err := Encode(want)
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		for _, entry := range []queue.SendEntry{e, EncodeRaw(want)} {
			got, err := Decode(&queue.Message{Body: entry.Body, Attributes: entry.Attributes})
			if err != nil {
				t.Fatalf("Decode(form %s) of an encoded dead letter: %v", entry.Attributes[AttrForm], err)
			}
			if !bytes.Equal(got.Body, body) || got.Reason != want.Reason || got.Attempts != want.Attempts ||
				!got.Time.Equal(want.Time) || got.SourceQueue != want.SourceQueue {
				t.Fatalf("form %s round trip:\n got %+v\nwant %+v", entry.Attributes[AttrForm], got, want)
			}
		}
	})
}
