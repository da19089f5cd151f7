package process

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

func TestSelf(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	id := Self(at)
	if id.PID != os.Getpid() || id.Hostname == "" || !id.Started.Equal(at) {
		t.Fatalf("Self = %+v", id)
	}
}

// TestEmbeddedJSON pins the names an embedding record gets: its own,
// flattened, with empty fields left out.
func TestEmbeddedJSON(t *testing.T) {
	type record struct {
		ID string `json:"id"`
		Identity
	}
	for _, c := range []struct {
		r    record
		want string
	}{
		{record{ID: "a", Identity: Identity{Hostname: "h", PID: 7, Started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}},
			`{"id":"a","hostname":"h","pid":7,"started":"2026-01-01T00:00:00Z"}`},
		{record{ID: "b"}, `{"id":"b"}`},
	} {
		b, err := json.Marshal(c.r)
		if err != nil || string(b) != c.want {
			t.Errorf("Marshal(%+v) = %s, %v; want %s", c.r, b, err, c.want)
		}
	}
}
