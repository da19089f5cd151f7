package main

import (
	"cmp"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestStoresValidate(t *testing.T) {
	code, out, errOut := pcsRun(t, nil, "", "stores", "validate", pcsTestdata+"accounts/accounts.json")
	if code != 0 || !strings.Contains(out, "ok: 4 accounts (3 active), 10 stores") {
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
	if code, out, errOut := pcsRun(t, env, "", "stores", "validate"); code != 0 || !strings.Contains(out, "ok: 4 accounts") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = pcsRun(t, env, "", "stores", "list")
	if code != 0 || !strings.Contains(out, "account1  active    2      false    s3    s3://mill-account1-replica/mill/") ||
		!strings.Contains(out, "role arn:aws:iam::123456789012:role/mill-replica") || !strings.Contains(out, "s3://archive/ @ https://s3.example.org") ||
		!strings.Contains(out, "profile archive") || !strings.Contains(out, "default chain") {
		t.Fatalf("list:\n%s", out)
	}
	// The fixity target, as written or by default (an fs store has no
	// archived copies).
	targets := map[string]string{"FIXITY TARGET": "", "mill-acme-glacier-staging": "  30d; archived 180d compute-checksum",
		"mill-acme-primary": "  90d; archived 365d compute-checksum", "/srv/mill/globex": "  90d"}
	for _, line := range strings.Split(out, "\n") {
		for k, want := range targets {
			if strings.Contains(line, k) && strings.HasSuffix(line, cmp.Or(want, k)) {
				delete(targets, k)
			}
		}
	}
	if len(targets) != 0 {
		t.Fatalf("list:\n%s", out)
	}
}

// stores put validates the registry and checks the policies in force
// against it before writing; stores get prints what is stored.
func TestStoresPutGet(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"account1-duplication-policy.json", "account2-duplication-policy.json", "duplication-accounts.json"} {
		pcsCopy(t, pcsTestdata+"policies/"+f, dir, f)
	}
	env := map[string]string{"MILL_CONFIG_DIR": dir}
	if code, _, errOut := pcsRun(t, env, "", "stores", "get"); code != 1 || !strings.Contains(errOut, "does not exist: load one with millctl stores put FILE") {
		t.Fatalf("get before put: exit %d, %q", code, errOut)
	}
	shipped := pcsTestdata + "accounts/accounts.json"
	code, out, errOut := pcsRun(t, env, "", "stores", "put", shipped)
	if code != 0 || !strings.Contains(out, "stored "+filepath.Join(dir, "accounts.json")+" (4 accounts (3 active), 10 stores)") {
		t.Fatalf("put: exit %d\n%s%s", code, out, errOut)
	}
	want, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	if code, out, _ := pcsRun(t, env, "", "stores", "get"); code != 0 || out != string(want) {
		t.Fatalf("get: exit %d\n%s", code, out)
	}

	// Store 3 of account1 is gone: account1's policy in force names it.
	noStore3 := `{"accounts": [
  {"id": "account1", "status": "active", "stores": [{"id": "1", "primary": true, "kind": "fs", "root": "/tmp/a"}, {"id": "2", "kind": "fs", "root": "/tmp/b"}]},
  {"id": "account2", "status": "active", "stores": [{"id": "1", "primary": true, "kind": "fs", "root": "/tmp/c"}, {"id": "2", "kind": "fs", "root": "/tmp/d"}]}]}`
	code, _, errOut = pcsRun(t, env, noStore3, "stores", "put", "-")
	if code != 1 || !strings.Contains(errOut, `account1-duplication-policy.json:10:9: store "3" is not a registered store of the account`) ||
		!strings.Contains(errOut, "1 policies in force do not fit the new registry; nothing written") {
		t.Fatalf("put without a store in use: exit %d\n%s", code, errOut)
	}
	// An account with a policy in force is gone.
	code, _, errOut = pcsRun(t, env, `{"accounts": [{"id": "account1", "status": "active", "stores": [{"id": "1", "primary": true, "kind": "fs", "root": "/tmp/a"}, {"id": "2", "kind": "fs", "root": "/tmp/b"}, {"id": "3", "kind": "fs", "root": "/tmp/e"}]}]}`, "stores", "put", "-")
	if code != 1 || !strings.Contains(errOut, `account "account2" has a duplication policy in force but is not in the new registry`) {
		t.Fatalf("put without an account in use: exit %d\n%s", code, errOut)
	}
	// An invalid registry: its problems at their positions.
	code, _, errOut = pcsRun(t, env, "", "stores", "put", pcsTestdata+"accounts/invalid/accounts.json")
	if code != 1 || !strings.Contains(errOut, "invalid/accounts.json:6:68:") {
		t.Fatalf("put of an invalid registry: exit %d\n%s", code, errOut)
	}
	if code, out, _ := pcsRun(t, env, "", "stores", "get"); code != 0 || out != string(want) {
		t.Fatalf("a refused put changed accounts.json:\n%s", out)
	}
	if code, _, _ := pcsRun(t, env, "", "stores", "put"); code != 2 {
		t.Fatalf("put without FILE: exit %d", code)
	}
}

// dev load writes no configuration over someone else's: a config source
// with another accounts.json or another policy is refused before anything
// is written or created.
func TestDevLoadKeepsOtherConfiguration(t *testing.T) {
	dir := t.TempDir()
	pcsCopy(t, pcsTestdata+"accounts/accounts.json", dir, "accounts.json")
	env := map[string]string{"MILL_CONFIG_DIR": dir}
	code, _, errOut := pcsRun(t, env, "", "dev", "load")
	if code != 1 || !strings.Contains(errOut, "accounts.json exists and is not the demo's") {
		t.Fatalf("dev load over another registry: exit %d\n%s", code, errOut)
	}
	dir = t.TempDir()
	pcsCopy(t, pcsTestdata+"policies/account1-duplication-policy.json", dir, "acme-duplication-policy.json")
	env = map[string]string{"MILL_CONFIG_DIR": dir}
	code, _, errOut = pcsRun(t, env, "", "dev", "load")
	if code != 1 || !strings.Contains(errOut, "acme-duplication-policy.json exists and is not the demo's") {
		t.Fatalf("dev load over another policy: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "accounts.json")); !os.IsNotExist(err) {
		t.Fatalf("a refused dev load wrote accounts.json: %v", err)
	}
}

// stores list shows where a DuraCloud-layout store keeps its spaces.
func TestStoresListDuraCloudLayout(t *testing.T) {
	dir := t.TempDir()
	reg := `{"accounts": [{"id": "dura", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "layout": "duracloud", "accountPrefix": "AKIAIOSFODNN7EXAMPLE", "bucket": "dura-books", "prefix": "mill/"}]}]}`
	if err := os.WriteFile(filepath.Join(dir, "accounts.json"), []byte(reg), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := pcsRun(t, map[string]string{"MILL_CONFIG_DIR": dir}, "", "stores", "list")
	if code != 0 || !strings.Contains(out, "s3://dura-books/mill/ + s3://akiaiosfodnn7example.<space>/") {
		t.Fatalf("stores list: exit %d\n%s%s", code, out, errOut)
	}
}
