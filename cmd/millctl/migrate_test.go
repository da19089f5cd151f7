package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/millfleet/mill/internal/testenv"
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
	pending := regexp.MustCompile(`(?m)^00[123]\s+\S+\s+pending$`)
	applied := regexp.MustCompile(`(?m)^00[123]\s+\S+\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)

	out := step(0, "migrate", "status")
	if !strings.HasPrefix(out, "VERSION") || len(pending.FindAllString(out, -1)) != 3 {
		t.Fatalf("status of a fresh schema:\n%s", out)
	}
	for round := 1; round <= 2; round++ {
		out = step(0, "migrate", "up")
		for _, m := range []string{"applied 001_content_index", "applied 002_bit_log", "applied 003_bit_report", "database at version 003, 0 pending\n"} {
			if !strings.Contains(out, m) {
				t.Fatalf("round %d up: no %q in\n%s", round, m, out)
			}
		}
		if out = step(0, "migrate", "up"); !strings.Contains(out, "database at version 003, 0 pending — nothing to do") {
			t.Fatalf("second up:\n%s", out)
		}
		if out = step(0, "migrate", "status"); len(applied.FindAllString(out, -1)) != 3 {
			t.Fatalf("status after up:\n%s", out)
		}
		if out = step(0, "migrate", "down"); !strings.Contains(out, "reverted 003_bit_report") || strings.Contains(out, "002") && !strings.Contains(out, "version 002") {
			t.Fatalf("down (default 1 step):\n%s", out)
		}
		if out = step(0, "migrate", "down", "--steps", "10"); !strings.Contains(out, "reverted 002_bit_log") ||
			!strings.Contains(out, "reverted 001_content_index") || !strings.Contains(out, "database at version 000, 3 pending") {
			t.Fatalf("down all:\n%s", out)
		}
		if out = step(0, "migrate", "status"); len(pending.FindAllString(out, -1)) != 3 {
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
