package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pcsRun runs one millctl command line in-process with the given
// environment (nothing else from the process environment unless listed)
// and returns the exit code, stdout and stderr.
func pcsRun(t *testing.T, env map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, stdin: strings.NewReader(stdin), getenv: func(k string) string { return env[k] }}
	a.logger = discardLogger()
	code := run(context.Background(), a, args)
	return code, out.String(), errb.String()
}

func pcsWrite(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func pcsCopy(t *testing.T, src, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	return pcsWrite(t, dir, name, string(b))
}

const pcsTestdata = "../../testdata/"

func TestPolicyValidate(t *testing.T) {
	code, out, errOut := pcsRun(t, nil, "", "policy", "validate",
		pcsTestdata+"policies/account1-duplication-policy.json",
		pcsTestdata+"policies/invalid/account1-duplication-policy.json",
		pcsTestdata+"policies/duplication-accounts.json")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "policies/account1-duplication-policy.json: ok") || !strings.Contains(out, "duplication-accounts.json: ok") {
		t.Fatalf("stdout:\n%s", out)
	}
	want := pcsTestdata + "policies/invalid/account1-duplication-policy.json:5:45: trailing comma before ']'\n"
	if !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, "1 of 3 files invalid") {
		t.Fatalf("stderr:\n%s\nwant first line %s", errOut, want)
	}

	// With a registry, unknown store ids are errors at their position.
	dir := t.TempDir()
	reg := pcsWrite(t, dir, "accounts.json", `{"accounts": [{"id": "account1", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": "/tmp/a"}, {"id": "2", "kind": "fs", "root": "/tmp/b"}]}]}`)
	code, _, errOut = pcsRun(t, nil, "", "policy", "validate", "--registry", reg, pcsTestdata+"policies/account1-duplication-policy.json")
	if code != 1 || !strings.Contains(errOut, `account1-duplication-policy.json:10:9: store "3" is not a registered store of the account`) {
		t.Fatalf("exit %d stderr:\n%s", code, errOut)
	}
	code, _, errOut = pcsRun(t, map[string]string{"MILL_REGISTRY": reg}, "", "policy", "validate", pcsTestdata+"policies/account1-duplication-policy.json")
	if code != 1 || !strings.Contains(errOut, `store "3"`) {
		t.Fatalf("MILL_REGISTRY not honoured: exit %d\n%s", code, errOut)
	}
	if code, _, _ := pcsRun(t, nil, "", "policy", "validate"); code != 2 {
		t.Fatalf("no files: exit %d, want 2", code)
	}
}

func TestPolicyPutGetListLocal(t *testing.T) {
	dir := t.TempDir()
	pcsWrite(t, dir, "accounts.json", `{"accounts": [{"id": "account1", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": "/tmp/a"}, {"id": "2", "kind": "fs", "root": "/tmp/b"},
  {"id": "3", "kind": "fs", "root": "/tmp/c"}]}]}`)
	env := map[string]string{"MILL_CONFIG_DIR": dir}

	// Invalid: nothing is written.
	code, _, errOut := pcsRun(t, env, "", "policy", "put", "account1", pcsTestdata+"policies/invalid/account1-duplication-policy.json")
	if code != 1 || !strings.Contains(errOut, ":5:45: trailing comma before ']'") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "account1-duplication-policy.json")); err == nil {
		t.Fatal("an invalid policy was written")
	}
	// Unknown account.
	if code, _, errOut := pcsRun(t, env, "", "policy", "put", "nobody", pcsTestdata+"policies/account1-duplication-policy.json"); code != 1 || !strings.Contains(errOut, `account "nobody" is not in the registry`) {
		t.Fatalf("exit %d\n%s", code, errOut)
	}

	code, out, errOut := pcsRun(t, env, "", "policy", "put", "account1", pcsTestdata+"policies/account1-duplication-policy.json")
	if code != 0 {
		t.Fatalf("put: exit %d\n%s", code, errOut)
	}
	if !strings.Contains(out, "stored account1-duplication-policy.json") {
		t.Fatal(out)
	}
	code, out, errOut = pcsRun(t, env, "", "policy", "get", "account1")
	if code != 0 || !strings.Contains(out, `"spaceB": [`) {
		t.Fatalf("get: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = pcsRun(t, env, "", "policy", "list")
	if code != 0 || out != "account1\tspaceA: 1->2; spaceB: 1->2,1->3\n" {
		t.Fatalf("list: exit %d %q", code, out)
	}
	// From stdin.
	stdin, _ := io.ReadAll(strings.NewReader(`{"spaceDuplicationStorePolicies": {}, "defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`))
	if code, _, errOut := pcsRun(t, env, string(stdin), "policy", "put", "account1", "-"); code != 0 {
		t.Fatalf("put -: %s", errOut)
	}
	if _, out, _ := pcsRun(t, env, "", "policy", "list"); out != "account1\tdefault: 1->2\n" {
		t.Fatalf("list: %q", out)
	}
	if code, _, errOut := pcsRun(t, env, "", "policy", "get", "nobody"); code != 1 || !strings.Contains(errOut, "not found") {
		t.Fatalf("get missing: %d %s", code, errOut)
	}
}

// policy delete removes the account from duplication-accounts.json and
// its policy file, after confirmation (or --yes).
func TestPolicyDelete(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"MILL_CONFIG_DIR": dir}
	for _, acct := range []string{"account1", "account2"} {
		if code, _, errOut := pcsRun(t, env, "", "policy", "put", acct, pcsTestdata+"policies/account1-duplication-policy.json"); code != 0 {
			t.Fatalf("put %s: %s", acct, errOut)
		}
	}
	file := filepath.Join(dir, "account1-duplication-policy.json")
	code, out, _ := pcsRun(t, env, "n\n", "policy", "delete", "account1")
	if code != 0 || !strings.Contains(out, "cancelled") {
		t.Fatalf("declined: exit %d %q", code, out)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatal("deleted without confirmation")
	}
	code, out, errOut := pcsRun(t, env, "y\n", "policy", "delete", "account1")
	if code != 0 || !strings.Contains(out, "deleted account1-duplication-policy.json") || !strings.Contains(errOut, "Delete the duplication policy of account1") {
		t.Fatalf("delete: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("policy file still there: %v", err)
	}
	if _, out, _ := pcsRun(t, env, "", "policy", "list"); !strings.HasPrefix(out, "account2\t") || strings.Contains(out, "account1") {
		t.Fatalf("list after delete: %q", out)
	}
	if code, _, errOut := pcsRun(t, env, "", "policy", "delete", "--yes", "account2"); code != 0 {
		t.Fatalf("delete --yes: %s", errOut)
	}
	if code, _, _ := pcsRun(t, env, "", "policy", "delete"); code != 2 {
		t.Fatalf("no account: exit %d, want 2", code)
	}
}

// validate and put refuse cycles, oversized files and byte order marks,
// with the position; put writes nothing then. get says when a policy file
// is not in force.
func TestPolicyRefusals(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"MILL_CONFIG_DIR": dir}
	cycle := pcsWrite(t, t.TempDir(), "acme-duplication-policy.json", "{\"defaultPolicies\": [\n  {\"srcStoreId\": \"1\", \"destStoreId\": \"2\"},\n  {\"srcStoreId\": \"2\", \"destStoreId\": \"1\"}]}")
	bom := pcsWrite(t, t.TempDir(), "bom.json", "\ufeff{}")
	big := pcsWrite(t, t.TempDir(), "big.json", `{"spacesToIgnore": ["`+strings.Repeat("x", 4<<20)+`"]}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"policy", "validate", cycle}, cycle + ":3:3: defaultPolicies: the store policies form a cycle 1→2→1"},
		{[]string{"policy", "put", "acme", cycle}, cycle + ":3:3: defaultPolicies: the store policies form a cycle 1→2→1"},
		{[]string{"policy", "validate", bom}, bom + ":1:1: the file starts with a UTF-8 byte order mark"},
		{[]string{"policy", "validate", big}, big + ": larger than the 4194304-byte limit"},
		{[]string{"policy", "put", "acme", big}, big + ": larger than the 4194304-byte limit"},
	} {
		code, _, errOut := pcsRun(t, env, "", tc.args...)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d\n%s\nwant %s", tc.args, code, errOut, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "acme-duplication-policy.json")); err == nil {
		t.Fatal("a refused policy was written")
	}
	chain := pcsWrite(t, t.TempDir(), "chain.json", `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "2", "destStoreId": "3"}]}`)
	code, out, errOut := pcsRun(t, env, "", "policy", "validate", chain)
	if code != 0 || !strings.Contains(out, chain+": ok") || !strings.Contains(errOut, chain+": note: defaultPolicies: store 2 receives 1→2 and is the source of 2→3") {
		t.Fatalf("validate chain: exit %d\n%s%s", code, out, errOut)
	}
	pcsWrite(t, dir, "orphan-duplication-policy.json", `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`)
	code, out, errOut = pcsRun(t, env, "", "policy", "get", "orphan")
	if code != 0 || !strings.Contains(out, "defaultPolicies") || !strings.Contains(errOut, `not in force: policy: account-not-listed: account "orphan" is not listed in duplication-accounts.json`) {
		t.Fatalf("get orphan: exit %d\n%s%s", code, out, errOut)
	}
}
