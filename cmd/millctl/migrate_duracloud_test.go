package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// migrate duracloud refuses, as usage errors and before reaching any
// store, what would not be a migration from a DuraCloud store to a Mill
// store.
func TestMigrateDuraCloudUsage(t *testing.T) {
	conf := t.TempDir()
	reg := fmt.Sprintf(`{"accounts": [{"id": "acme", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "layout": "duracloud", "accountPrefix": "AKIAIOSFODNN7EXAMPLE", "bucket": "books", "region": "us-east-1"},
  {"id": "2", "kind": "fs", "root": %q},
  {"id": "3", "kind": "s3", "layout": "duracloud", "accountPrefix": "AKIAIOSFODNN7EXAMPL2", "bucket": "books2", "region": "us-east-1"}]}]}`, t.TempDir())
	if err := os.WriteFile(filepath.Join(conf, "accounts.json"), []byte(reg), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"acme", "1"}, "want ACCOUNT FROM TO"},
		{[]string{"acme", "1", "1"}, "the same store"},
		{[]string{"acme", "2", "1"}, "store 2 of acme is not a DuraCloud store"},
		{[]string{"acme", "1", "3"}, "store 3 of acme is a DuraCloud store"},
		{[]string{"acme", "1", "2", "../etc"}, `SPACE "../etc"`},
		{[]string{"--workers", "0", "acme", "1", "2"}, "--workers must be 1 to 256"},
		{[]string{"--transfer-part-size", "1024", "acme", "1", "2"}, "at least 5 MiB"},
	} {
		code, _, stderr := runMillctl(t, append([]string{"migrate", "duracloud", "--config-dir", conf}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("migrate duracloud %v: exit %d, %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
