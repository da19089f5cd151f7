package adversarial

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/milldb"
)

// TestConsoleAttacks runs the real `millctl console` with its default
// --auth none on a loopback address, a bit log in PostgreSQL, and attacks
// it as a web page would whose name was rebound to 127.0.0.1 (any Host,
// posting "same-origin" for itself), as a careless or hostile client would
// (an empty, unreadable or mistyped form; a foreign Referer) and with NUL
// and invalid UTF-8 in a filter. Nothing is served to the foreign name,
// nothing changes, the bad input is a 400, not a 500. The console refuses
// to start with --auth none and a host name that is not a loopback one.
func TestConsoleAttacks(t *testing.T) {
	millctl := testbin.Build(t, "millctl")["millctl"]
	ctx := context.Background()
	conf, changes := filepath.Join(t.TempDir(), "config"), filepath.Join(t.TempDir(), "changes")
	must(t, os.MkdirAll(conf, 0o755))
	for name, body := range map[string]string{
		"accounts.json": `{"accounts": [{"id": "acme", "status": "active", "stores": [
			{"id": "1", "primary": true, "kind": "fs", "root": "/srv/acme-1"}, {"id": "2", "kind": "fs", "root": "/srv/acme-2"}]}]}`,
		"duplication-policy-acme.json": `{"spaceDuplicationStorePolicies": {"photos": [{"srcStoreId": "1", "destStoreId": "2"}]}}`,
		"duplication-accounts.json":    `["acme"]`,
	} {
		must(t, os.WriteFile(filepath.Join(conf, name), []byte(body), 0o644))
	}
	dbURL := testenv.Schema(t)
	pool, err := pgxpool.New(ctx, dbURL)
	must(t, err)
	_, err = milldb.Up(ctx, pool)
	pool.Close()
	must(t, err)

	env := consoleEnv()
	args := []string{"console", "--config-dir", conf, "--change-log", changes, "--database-url", dbURL,
		"--queue-prefix", testenv.Prefix(t), "--reports-dir", t.TempDir(), "--claims-bucket", "", "--fleet-table", ""}

	// --auth none with a public name: refused at the start.
	refused := testbin.Run(t, time.Minute, testbin.Spec{Path: millctl, Args: append(args, "--listen", testbin.FreeAddr(t), "--allowed-host", "127.0.0.1,console.example.org"), Env: env})
	if out, err := refused.Output(), refused.Err(); err == nil || !strings.Contains(out, "loopback") || !strings.Contains(out, "console.example.org") {
		t.Errorf("millctl console --auth none --allowed-host console.example.org: %v\n%s", err, out)
	}

	addr := testbin.FreeAddr(t)
	port := addr[strings.LastIndex(addr, ":")+1:]
	console := testbin.Start(t, testbin.Spec{Path: millctl, Args: append(args, "--listen", addr), Env: env})
	send := consoleSender(t, addr)
	console.WaitHealthy(t, 30*time.Second, addr)
	if !strings.Contains(console.Output(), "answers localhost:"+port+", 127.0.0.1:"+port+", [::1]:"+port) {
		t.Errorf("the startup line does not say which hosts are answered:\n%s", console.Output())
	}
	listed := func() string {
		b, err := os.ReadFile(filepath.Join(conf, "duplication-accounts.json"))
		must(t, err)
		return strings.Join(strings.Fields(string(b)), "")
	}
	form := "application/x-www-form-urlencoded"

	// A page whose name was rebound to 127.0.0.1.
	for _, host := range []string{"rebound.example:" + port, "rebound.example", "localhost.rebound.example:" + port, "0.0.0.0:" + port} {
		if st, body := send("GET", "/policies", host, ""); st != http.StatusMisdirectedRequest || strings.Contains(body, "acme") {
			t.Errorf("GET /policies with Host %q: %d %.100q", host, st, body)
		}
		if st, _ := send("POST", "/policies/acme/listed", host, "listed=false", "Content-Type", form,
			"Origin", "http://"+host, "Sec-Fetch-Site", "same-origin"); st != http.StatusMisdirectedRequest {
			t.Errorf("the rebound page's POST with Host %q: %d", host, st)
		}
	}
	// Forms that are empty, of another type, mistyped, twice, or from a
	// foreign page.
	self := "127.0.0.1:" + port
	for name, c := range map[string]struct {
		body string
		hdr  []string
		want int
	}{
		"empty body":      {"", []string{"Content-Type", form}, http.StatusBadRequest},
		"text/plain":      {"listed=false", []string{"Content-Type", "text/plain"}, http.StatusBadRequest},
		"no content type": {"listed=false", nil, http.StatusBadRequest},
		"no listed":       {"back=account", []string{"Content-Type", form}, http.StatusBadRequest},
		"listed=no":       {"listed=no", []string{"Content-Type", form}, http.StatusBadRequest},
		"listed twice":    {"listed=true&listed=false", []string{"Content-Type", form}, http.StatusBadRequest},
		"listed=NUL":      {"listed=false%00", []string{"Content-Type", form}, http.StatusBadRequest},
		"foreign referer": {"listed=false", []string{"Content-Type", form, "Referer", "http://rebound.example:" + port + "/"}, http.StatusForbidden},
		"foreign origin":  {"listed=false", []string{"Content-Type", form, "Origin", "http://localhost:1" + port}, http.StatusForbidden},
	} {
		hdr := append([]string{"Sec-Fetch-Site", "same-origin"}, c.hdr...)
		if st, _ := send("POST", "/policies/acme/listed", self, c.body, hdr...); st != c.want {
			t.Errorf("POST /policies/acme/listed, %s: %d, want %d", name, st, c.want)
		}
	}
	// NUL and invalid UTF-8 in a filter, on the bit log in PostgreSQL.
	for _, q := range []string{"account=acme%00", "space=%FF%FE", "run=r&store=%C0%80", "repaired=yes"} {
		if st, body := send("GET", "/bit/results?"+q, self, ""); st != http.StatusBadRequest || !strings.Contains(body, "Bad") {
			t.Errorf("GET /bit/results?%s: %d, want 400", q, st)
		}
	}
	if l := listed(); l != `["acme"]` {
		t.Fatalf("the attacks changed duplication-accounts.json: %s", l)
	}
	if ents, _ := os.ReadDir(changes); len(ents) != 0 {
		t.Errorf("the change log recorded %d changes", len(ents))
	}
	// The console's own page, on a loopback name, still works.
	if st, body := send("GET", "/policies", "localhost:"+port, ""); st != 200 || !strings.Contains(body, "acme") {
		t.Errorf("GET /policies on localhost: %d", st)
	}
	if st, _ := send("POST", "/policies/acme/listed", self, "listed=false", "Content-Type", form, "Origin", "http://"+self, "Sec-Fetch-Site", "same-origin"); st != http.StatusSeeOther || listed() != `[]` {
		t.Errorf("the console's own unlist: %d, listed %s", st, listed())
	}
}
