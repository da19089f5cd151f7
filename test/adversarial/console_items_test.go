package adversarial

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/spacestats/pgspacestats"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
)

// TestConsoleItemAttacks runs the real `millctl console` (--auth none, a
// loopback address) on a content index and statistics in PostgreSQL and
// two directory stores, and attacks the item pages: content IDs and
// account names that are markup, links, bidi overrides or formulas are
// served escaped (HTML) or quoted (CSV); names that are too long, not
// UTF-8 or missing are a 400; a restore posted by a page whose name was
// rebound to 127.0.0.1, from a foreign origin, naming a version of another
// item, or naming no version that exists changes nothing and records
// nothing; the console's own restore works and is audited and recorded.
func TestConsoleItemAttacks(t *testing.T) {
	millctl := testbin.Build(t, "millctl")["millctl"]
	ctx := context.Background()
	dir := t.TempDir()
	conf, changes := filepath.Join(dir, "config"), filepath.Join(dir, "changes")
	must(t, os.MkdirAll(conf, 0o755))
	root := func(st string) string { return filepath.Join(dir, "store-"+st) }
	for name, body := range map[string]string{
		"accounts.json": fmt.Sprintf(`{"accounts": [{"id": "acme", "status": "active", "stores": [
			{"id": "1", "primary": true, "kind": "fs", "root": %q}, {"id": "2", "kind": "fs", "root": %q}]}]}`, root("1"), root("2")),
		"duplication-policy-acme.json": `{"spaceDuplicationStorePolicies": {"photos": [{"srcStoreId": "1", "destStoreId": "2"}]}}`,
		"duplication-accounts.json":    `["acme"]`,
	} {
		must(t, os.WriteFile(filepath.Join(conf, name), []byte(body), 0o644))
	}
	dbURL := testenv.Schema(t)
	pool, err := pgxpool.New(ctx, dbURL)
	must(t, err)
	defer pool.Close()
	_, err = milldb.Up(ctx, pool)
	must(t, err)
	prefix := testenv.Prefix(t)
	sqsc := testenv.AWS(t).SQS()
	testenv.CleanupQueues(t, sqsc, prefix)
	auditQ, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(queue.Name(prefix, queue.KeyAudit))})
	must(t, err)

	// Two items on store 2, both deleted (each in the trash); hostile
	// names in the index.
	s2, err := fsstore.New(root("2"))
	must(t, err)
	must(t, s2.CreateSpace(ctx, "photos"))
	version := map[string]string{}
	for _, id := range []string{"a.jpg", "b.jpg"} {
		body := []byte("content of " + id)
		_, err := s2.Put(ctx, "photos", id, bytes.NewReader(body), storage.PutOptions{Size: int64(len(body))})
		must(t, err)
		must(t, s2.Delete(ctx, "photos", id))
		vs, err := s2.Versions(ctx, "photos", id)
		must(t, err)
		if len(vs) != 1 {
			t.Fatalf("%s: %d versions", id, len(vs))
		}
		version[id] = vs[0].ID
	}
	index := pgcontentindex.New(pool)
	hostile := []string{`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`, "javascript:alert(1)", "\u202Egpj.exe", strings.Repeat("x", 10_000)}
	for _, id := range append([]string{"a.jpg", "b.jpg"}, hostile...) {
		_, err := index.Upsert(ctx, contentindex.Entry{Item: contentindex.Item{Account: "acme", StoreID: "2", SpaceID: "photos", ContentID: id}, Modified: time.Now()})
		must(t, err)
	}
	must(t, pgspacestats.New(pool).Put(ctx, spacestats.Stats{RunID: "r1", Account: "acme", StoreID: "1", SpaceID: "=HYPERLINK(\"http://evil\")", Items: 1, Bytes: 1}))

	env := consoleEnv()
	addr := testbin.FreeAddr(t)
	port := addr[strings.LastIndex(addr, ":")+1:]
	console := testbin.Start(t, testbin.Spec{Path: millctl, Env: env, Args: []string{"console", "--config-dir", conf, "--change-log", changes,
		"--database-url", dbURL, "--queue-prefix", prefix, "--claims-bucket", "", "--fleet-table", "", "--audit-table", "", "--alarms=false", "--listen", addr}})
	console.WaitHealthy(t, 30*time.Second, addr)
	self := "127.0.0.1:" + port
	send := consoleSender(t, addr)

	// Hostile names are served escaped.
	st, page := send("GET", "/items?account=acme&space=photos", self, "")
	if st != 200 || strings.Contains(page, "<script>alert") || strings.Contains(page, "<img src=x") || strings.Contains(page, `href="javascript:`) ||
		!strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(page, "<bdi>\u202Egpj.exe</bdi>") {
		t.Errorf("the search page with hostile names: %d\n%.2000s", st, page)
	}
	if st, csv := send("GET", "/statistics.csv?by=space", self, ""); st != 200 || !strings.Contains(csv, `"'=HYPERLINK(""http://evil"")"`) {
		t.Errorf("a formula in the CSV: %d\n%s", st, csv)
	}
	// Bad names are a 400.
	for _, q := range []string{"account=acme&space=photos", "account=acme&space=photos&id=" + strings.Repeat("x", 2000),
		"account=acme&space=photos&id=%FF", "account=acme&space=photos&id=a%00"} {
		if st, _ := send("GET", "/item?"+q, self, ""); st != http.StatusBadRequest {
			t.Errorf("GET /item?%.60s: %d, want 400", q, st)
		}
	}
	if st, _ := send("GET", "/items?account=acme&space=photos&prefix="+strings.Repeat("x", 2000), self, ""); st != http.StatusBadRequest {
		t.Errorf("a 2,000-byte prefix: %d, want 400", st)
	}

	// Restores that must change nothing.
	form := "application/x-www-form-urlencoded"
	restore := func(id, ver string) string {
		return url.Values{"account": {"acme"}, "store": {"2"}, "space": {"photos"}, "id": {id}, "version": {ver}}.Encode()
	}
	for name, c := range map[string]struct {
		host, body string
		hdr        []string
		want       int
	}{
		"rebound page":         {"rebound.example:" + port, restore("a.jpg", version["a.jpg"]), []string{"Origin", "http://rebound.example:" + port}, http.StatusMisdirectedRequest},
		"foreign origin":       {self, restore("a.jpg", version["a.jpg"]), []string{"Origin", "http://evil.example"}, http.StatusForbidden},
		"another item's trash": {self, restore("a.jpg", version["b.jpg"]), []string{"Origin", "http://" + self}, http.StatusNotFound},
		"no such version":      {self, restore("a.jpg", "../../../etc/passwd"), []string{"Origin", "http://" + self}, http.StatusNotFound},
		"unknown store":        {self, strings.Replace(restore("a.jpg", version["a.jpg"]), "store=2", "store=9", 1), []string{"Origin", "http://" + self}, http.StatusBadRequest},
		"no version field":     {self, "account=acme&store=2&space=photos&id=a.jpg", []string{"Origin", "http://" + self}, http.StatusBadRequest},
	} {
		hdr := append([]string{"Content-Type", form, "Sec-Fetch-Site", "same-origin"}, c.hdr...)
		if st, _ := send("POST", "/item/restore", c.host, c.body, hdr...); st != c.want {
			t.Errorf("restore, %s: %d, want %d", name, st, c.want)
		}
	}
	for _, id := range []string{"a.jpg", "b.jpg"} {
		if _, err := s2.Head(ctx, "photos", id); err == nil {
			t.Errorf("%s was restored by an attack", id)
		}
	}
	if ents, _ := os.ReadDir(changes); len(ents) != 0 {
		t.Errorf("the attacks recorded %d changes", len(ents))
	}
	depth := func() string {
		out, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: auditQ.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"ApproximateNumberOfMessages"}})
		must(t, err)
		return out.Attributes["ApproximateNumberOfMessages"]
	}
	if d := depth(); d != "0" {
		t.Errorf("the attacks sent %s audit messages", d)
	}

	// The console's own restore: done, audited, recorded.
	st, _ = send("POST", "/item/restore", self, restore("a.jpg", version["a.jpg"]), "Content-Type", form, "Sec-Fetch-Site", "same-origin", "Origin", "http://"+self)
	if info, err := s2.Head(ctx, "photos", "a.jpg"); st != http.StatusSeeOther || err != nil || info.Size != int64(len("content of a.jpg")) {
		t.Fatalf("the console's restore: %d, %+v, %v", st, info, err)
	}
	if d := depth(); d != "1" {
		t.Errorf("the restore sent %s audit messages, want 1", d)
	}
	if ents, _ := os.ReadDir(changes); len(ents) != 1 {
		t.Errorf("the restore recorded %d changes, want 1", len(ents))
	}
}

// consoleEnv is the environment of a console under test: this one's,
// without the MILL_ variables (the flags say everything).
func consoleEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "MILL_") {
			env = append(env, kv)
		}
	}
	return env
}

// consoleSender returns a function that sends a request to the console
// at addr with the Host header host and the headers hdr (name, value…),
// following no redirect, and returns the status and body.
func consoleSender(t *testing.T, addr string) func(method, path, host, body string, hdr ...string) (int, string) {
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return func(method, path, host, body string, hdr ...string) (int, string) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, "http://"+addr+path, rd)
		must(t, err)
		req.Host = host
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		must(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}
