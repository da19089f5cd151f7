package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestBar(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, "redrive", 4)
	t0 := time.Unix(0, 0)
	b.start, b.now = t0, func() time.Time { return t0.Add(2 * time.Second) }
	b.Add(1)
	b.Add(1)
	b.Finish()
	out := buf.String()
	want := "\rredrive [###############...............] 2/4  1.0/s \n"
	if !strings.HasSuffix(out, want) || strings.Count(out, "\r") != 3 {
		t.Errorf("got %q, want suffix %q", out, want)
	}
	buf.Reset()
	u := New(&buf, "n", 0)
	u.Add(3)
	if !strings.Contains(buf.String(), "n 3 ") {
		t.Errorf("unknown total: %q", buf.String())
	}
}
