package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestStoresValidate(t *testing.T) {
	code, out, errOut := pcsRun(t, nil, "", "stores", "validate", pcsTestdata+"accounts/accounts.json")
	if code != 0 || !strings.Contains(out, "ok: 2 accounts (1 active), 4 stores") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = pcsRun(t, nil, "", "stores", "validate", pcsTestdata+"accounts/invalid/accounts.json")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if len(lines) != 7 || !strings.Contains(lines[0], "invalid/accounts.json:6:68: store: \"secretAccessKey\" looks like a credential") ||
		lines[6] != "millctl stores validate: 6 problems" {
		t.Fatalf("stderr:\n%s", errOut)
	}
	// From the config directory.
	env := map[string]string{"MILL_CONFIG_DIR": pcsTestdata + "accounts"}
	if code, out, errOut := pcsRun(t, env, "", "stores", "validate"); code != 0 || !strings.Contains(out, "ok: 2 accounts") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = pcsRun(t, env, "", "stores", "list")
	if code != 0 || !strings.Contains(out, "account1  active    2      false    s3    s3://mill-account1-replica/mill/") ||
		!strings.Contains(out, "role arn:aws:iam::123456789012:role/mill-replica") || !strings.Contains(out, "s3://archive/ @ https://s3.example.org") ||
		!strings.Contains(out, "profile archive") || !strings.Contains(out, "default chain") {
		t.Fatalf("list:\n%s", out)
	}
}
