package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/milldb"
)

func TestMigrateCommands(t *testing.T) {
	env := map[string]string{"MILL_DATABASE_URL": testenv.Schema(t)}
	step := func(want int, args ...string) string {
		t.Helper()
		code, out, errOut := setupRun(t, env, args...)
		if code != want {
			t.Fatalf("millctl %s: exit %d, want %d; stderr %s", strings.Join(args, " "), code, want, errOut)
		}
		return out
	}
	migs, err := milldb.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	n := len(migs)
	last, prev := migs[n-1], migs[n-2]
	pending := regexp.MustCompile(`(?m)^\d{3}\s+\S+\s+pending$`)
	applied := regexp.MustCompile(`(?m)^\d{3}\s+\S+\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)
	atLast := fmt.Sprintf("database at version %03d, 0 pending", last.Version)

	out := step(0, "migrate", "status")
	if !strings.HasPrefix(out, "VERSION") || len(pending.FindAllString(out, -1)) != n {
		t.Fatalf("status of a fresh schema:\n%s", out)
	}
	for round := 1; round <= 2; round++ {
		out = step(0, "migrate", "up")
		want := []string{atLast + "\n"}
		for _, m := range migs {
			want = append(want, "applied "+m.ID())
		}
		for _, m := range want {
			if !strings.Contains(out, m) {
				t.Fatalf("round %d up: no %q in\n%s", round, m, out)
			}
		}
		if out = step(0, "migrate", "up"); !strings.Contains(out, atLast+" — nothing to do") {
			t.Fatalf("second up:\n%s", out)
		}
		if out = step(0, "migrate", "status"); len(applied.FindAllString(out, -1)) != n {
			t.Fatalf("status after up:\n%s", out)
		}
		if out = step(0, "migrate", "down"); !strings.Contains(out, "reverted "+last.ID()) ||
			!strings.Contains(out, fmt.Sprintf("version %03d", prev.Version)) {
			t.Fatalf("down (default 1 step):\n%s", out)
		}
		if out = step(0, "migrate", "down", "--steps", fmt.Sprint(n)); !strings.Contains(out, "reverted "+migs[1].ID()) ||
			!strings.Contains(out, "reverted "+migs[0].ID()) || !strings.Contains(out, fmt.Sprintf("database at version 000, %d pending", n)) {
			t.Fatalf("down all:\n%s", out)
		}
		if out = step(0, "migrate", "status"); len(pending.FindAllString(out, -1)) != n {
			t.Fatalf("status after down:\n%s", out)
		}
	}
	step(2, "migrate", "down", "--steps", "0")
	step(2, "migrate", "sideways")
	step(2, "migrate")
	if code, _, errOut := setupRun(t, nil, "migrate", "status"); code != 2 || !strings.Contains(errOut, "MILL_DATABASE_URL") {
		t.Fatalf("no database URL: exit %d %s", code, errOut)
	}
}
