package bitlogtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
)

// testAgent: a row keeps the agent that made its check through Results
// and Checked; a redelivered check replaces it (with none, too); a row
// without one reads back without one; an agent field too long, not
// UTF-8 or with a control character is refused and writes nothing.
func testAgent(t *testing.T, l bitlog.Log) {
	ctx := context.Background()
	c, ok := l.(bitlog.Checked)
	if !ok {
		t.Fatalf("%T does not implement bitlog.Checked", l)
	}
	agent := bitlog.Agent{Instance: "ip-10-0-1-7-4242", Version: "v1.4.0"}
	r := row("20240305T140000Z", "photos", "a", bitlog.ResultSuccess)
	r.Agent = agent
	record(t, l, r)
	plain := row("20240305T140000Z", "photos", "b", bitlog.ResultSuccess)
	record(t, l, plain)
	read := func() map[string]bitlog.Row {
		t.Helper()
		got := map[string]bitlog.Row{}
		rows, _ := results(t, l, bitlog.Filter{RunID: r.RunID})
		checked, _, err := c.Checked(ctx, t0, t0.Add(time.Second), "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(checked) != len(rows) {
			t.Fatalf("Checked %d rows, Results %d", len(checked), len(rows))
		}
		for i, x := range rows {
			if checked[i] != x {
				t.Errorf("Checked row %+v\nResults row %+v", checked[i], x)
			}
			got[x.ContentID] = x
		}
		return got
	}
	got := read()
	if got["a"] != r {
		t.Errorf("row with an agent = %+v\nwant %+v", got["a"], r)
	}
	if got["b"] != plain || got["b"].Agent != (bitlog.Agent{}) {
		t.Errorf("row without an agent = %+v\nwant %+v", got["b"], plain)
	}
	// A redelivered check, by another Workman, replaces the agent; one
	// by a writer that names none leaves no agent.
	r.Agent = bitlog.Agent{Instance: "other", Version: "v1.5.0"}
	record(t, l, r)
	plain.Agent = agent
	record(t, l, plain)
	got = read()
	if got["a"].Agent != r.Agent || got["b"].Agent != agent {
		t.Errorf("after redelivery: agents %+v and %+v, want %+v and %+v", got["a"].Agent, got["b"].Agent, r.Agent, agent)
	}
	r.Agent = bitlog.Agent{}
	record(t, l, r)
	if got = read(); got["a"].Agent != (bitlog.Agent{}) {
		t.Errorf("a redelivery without an agent kept %+v", got["a"].Agent)
	}
	for _, a := range []bitlog.Agent{
		{Instance: strings.Repeat("x", bitlog.MaxAgentField+1)},
		{Version: "v1\n2"},
		{Instance: "bad\xff"},
	} {
		bad := row("20240305T140000Z", "photos", "c", bitlog.ResultSuccess)
		bad.Agent = a
		if err := l.Record(ctx, bad); !errors.Is(err, bitlog.ErrInvalid) {
			t.Errorf("Record with agent %+q = %v, want ErrInvalid", a, err)
		}
	}
	if got = read(); len(got) != 2 {
		t.Errorf("invalid agents were stored: %d rows", len(got))
	}
}
