package evidence

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/millfleet/mill/pkg/blob/dirblob"
)

// FuzzParseCanonical: whatever bytes a leaf holds, ParseCanonical either
// refuses them or returns a valid event whose canonical bytes are exactly
// those bytes (one event, one encoding).
func FuzzParseCanonical(f *testing.F) {
	for _, e := range sampleEvents() {
		b, _ := e.Canonical()
		f.Add(b)
	}
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := ParseCanonical(b)
		if err != nil {
			return
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("parsed an invalid event: %v", err)
		}
		c, err := e.Canonical()
		if err != nil || !bytes.Equal(c, b) {
			t.Fatalf("parsed %q, whose canonical bytes are %q (%v)", b, c, err)
		}
	})
}

// FuzzCheckProof: a hostile proof file never panics and is only accepted
// when it proves an event of the signed log.
func FuzzCheckProof(f *testing.F) {
	ctx := context.Background()
	skey, v := testKey(f)
	d := dirblob.New(f.TempDir(), nil)
	l, err := Open(ctx, d, skey, Options{})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := l.Append(ctx, fixityEvents(0, 20)); err != nil {
		f.Fatal(err)
	}
	for _, i := range []int{0, 7, 19} {
		p, err := Prove(ctx, d, v, fixityEvent(i).ID)
		if err != nil {
			f.Fatal(err)
		}
		b, _ := json.Marshal(p)
		f.Add(b)
	}
	logged := map[string]bool{}
	for _, e := range fixityEvents(0, 20) {
		logged[e.ID] = true
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, cp, err := CheckProof(b, v)
		if err != nil {
			return
		}
		if !logged[e.ID] || cp.Size != 20 {
			t.Fatalf("accepted a proof of %s at size %d", e.ID, cp.Size)
		}
	})
}
