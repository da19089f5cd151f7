package adversarial

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage/fsstore"
)

// TestMigrateDuraCloudHostileContent: a DuraCloud store whose space holds
// items named to escape a filesystem destination, to run as a formula in
// the report's spreadsheet, or with a control character, next to a
// hidden space's bucket and another account's, migrated by the real
// millctl into a filesystem store. Nothing outside the destination's
// root changes and no bucket changes; only the account's own space is
// migrated; the formula is inert in the CSV report; the item with a
// control character, and the one the destination cannot hold, are
// refused (not failed: a later run would fail again) and written nowhere.
func TestMigrateDuraCloudHostileContent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bins := testbin.Build(t, "millctl")
	m := newMill(t, ctx)

	acct := strings.ToLower(testenv.AccessKeyID())
	other := strings.ToLower(testenv.AccessKeyID())
	books := m.prefix + "mig-books"
	for _, b := range []string{books, acct + ".photos", "hidden-" + acct + ".secret", other + ".photos"} {
		_, err := m.s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)})
		must(t, err)
		testenv.CleanupBucket(t, m.s3c, b)
		m.buckets = append(m.buckets, b)
	}
	formula := `=cmd|' /C calc'!A0`
	for b, keys := range map[string][]string{
		acct + ".photos":             {"ok.txt", "../../../outside/evil.txt", formula, "tab\there"},
		"hidden-" + acct + ".secret": {"hidden.txt"},
		other + ".photos":            {"theirs.txt"},
	} {
		for _, k := range keys {
			_, err := m.s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String(k), Body: strings.NewReader("content of " + k), ContentType: aws.String("text/plain")})
			must(t, err)
		}
	}
	root4 := filepath.Join(t.TempDir(), "store4")
	must(t, os.MkdirAll(root4, 0o755))
	m.extraAccounts = fmt.Sprintf(`, {"id": "dura", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "layout": "duracloud", "accountPrefix": %q, "bucket": %q, "region": "us-east-1"},
  {"id": "4", "kind": "fs", "root": %q}]}`, strings.ToUpper(acct), books, root4)
	m.writeConfig(nil, nil)
	before := m.snapshot()
	m.dirs = append(m.dirs, root4)

	reports := t.TempDir()
	p := testbin.Run(t, time.Minute, testbin.Spec{Path: bins["millctl"], Args: []string{"migrate", "duracloud", "--reports-dir", reports, "dura", "1", "4"}, Env: m.env()})
	t.Logf("millctl migrate duracloud: exit %d\n%s%s", p.ExitCode(), p.Stdout(), p.Stderr())
	if p.ExitCode() > 1 {
		t.Fatalf("exit %d", p.ExitCode())
	}
	after := m.snapshot()
	if d := before.diff(after, func(path string) bool {
		return strings.HasPrefix(path, root4+string(filepath.Separator)) || path == root4
	}); len(d) > 0 {
		t.Errorf("changed outside the destination's root:\n%s", strings.Join(d, "\n"))
	}
	dst, err := fsstore.New(root4)
	must(t, err)
	if spaces, err := dst.ListSpaces(ctx); err != nil || !slices.Equal(spaces, []string{"photos"}) {
		t.Errorf("destination spaces %v, %v; want only photos", spaces, err)
	}
	ids, _, err := dst.ListContent(ctx, "photos", "", 100)
	must(t, err)
	for _, id := range ids {
		if strings.ContainsAny(id, "\t") || id == "theirs.txt" || id == "hidden.txt" {
			t.Errorf("destination holds %q", id)
		}
	}
	if !slices.Contains(ids, "ok.txt") || !slices.Contains(ids, formula) {
		t.Errorf("destination items %q: want ok.txt and the formula-named item among them", ids)
	}
	if !strings.Contains(p.Stdout(), "refused       2 items") || !strings.Contains(p.Stdout(), "failed        0 items") {
		t.Errorf("summary does not say 2 refused, 0 failed")
	}
	csvs, _ := filepath.Glob(filepath.Join(reports, "migrations", "dura", "1-4", "*.csv"))
	if len(csvs) != 1 {
		t.Fatalf("CSV reports %v", csvs)
	}
	b, err := os.ReadFile(csvs[0])
	must(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, ",=") || strings.Contains(line, `,"=`) {
			t.Errorf("CSV cell runs as a formula: %s", line)
		}
	}
}
