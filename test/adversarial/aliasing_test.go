package adversarial

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/workman"
)

// TestAliasedRegistries: a registry in which another account's store (or
// another store of acme) is one of acme's stores under another name —
// the same bucket and prefix, a prefix around or inside it, an fs root
// that is acme's, inside it, "/", relative, or reached through "..". With
// such a registry a policy of the second account deletes what acme's
// store holds. Every binary that reads the registry refuses it, naming
// the file, line and column and both stores: millctl stores validate and
// stores put (nothing written), workman at start (it does not run: a DUP
// task of the alias waiting in its queue is never processed) and
// dupproducer (no state written, nothing queued). Afterwards every object
// version and every file is as before, and acme's items are all there.
func TestAliasedRegistries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	testbin.Build(t, "workman")
	bins := testbin.Build(t, "millctl", "dupproducer")
	m := newMill(t, ctx)
	items := map[string]string{"a": "alpha content", "b": "bravo content"}
	for id, body := range items {
		for _, s := range []string{"1", "2", "3"} {
			m.put(s, space, id, body)
		}
	}
	// mallory's store 1: an empty directory of its own, the source of its
	// default policy.
	own := filepath.Join(t.TempDir(), "mallory-1")
	must(t, os.MkdirAll(own, 0o755))
	m.dirs = append(m.dirs, own)
	m.writeConfig([]string{"mallory"}, map[string]string{
		"mallory-duplication-policy.json": `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`,
	})
	good, err := os.ReadFile(filepath.Join(m.conf, "accounts.json"))
	must(t, err)
	before := m.snapshot()

	// The task the alias would act on: mirror mallory's empty store 1 onto
	// "its" store 2, deleting what store 2 holds that store 1 lacks.
	dupTask := dup(t, "mallory", "1", "2", space, "a")

	s3 := func(bucket, prefix string) string {
		return fmt.Sprintf(`{"id": "2", "kind": "s3", "bucket": %q, "prefix": %q, "region": "us-east-1"}`, bucket, prefix)
	}
	fsRoot := func(root string) string { return fmt.Sprintf(`{"id": "2", "kind": "fs", "root": %q}`, root) }
	alias := func(loc string) string {
		return fmt.Sprintf(`{"id": "mallory", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": %q},
  %s]}`, own, loc)
	}
	type attack struct {
		name    string
		account string // the aliased store's account, or "" for a second store of acme
		store   string // the aliased store, as JSON
		want    string // the reason, after "account … store "2""
	}
	acme1 := fmt.Sprintf(`account "acme" store "1" (s3://%s/mill/)`, m.bucket1)
	acme3 := fmt.Sprintf(`account "acme" store "3" (root %q)`, m.root3)
	attacks := []attack{
		{"acme's bucket and prefix", "mallory", s3(m.bucket1, "mill/"), "is the same location as " + acme1},
		{"acme's bucket, capitalised", "mallory", s3(strings.ToUpper(m.bucket1), "mill/"), "is the same location as " + acme1},
		{"the whole of acme's bucket", "mallory", s3(m.bucket1, ""), "contains " + acme1},
		{"a prefix inside acme's", "mallory", s3(m.bucket1, "mill/photos/"), "lies inside " + acme1},
		{"acme's root", "mallory", fsRoot(m.root3 + "/"), "is the same location as " + acme3},
		{"a root inside acme's", "mallory", fsRoot(filepath.Join(m.root3, space)), "lies inside " + acme3},
		{"the root /", "mallory", fsRoot("/"), `root "/" is the whole filesystem`},
		{"a relative root", "mallory", fsRoot("store3"), `root "store3" is not an absolute path`},
		{"acme's root through ..", "mallory", fsRoot(m.root3 + "/../store3"), `has a ".." segment`},
		{"a second store of acme on its primary's bucket", "", `{"id": "4", "kind": "s3", "bucket": "` + m.bucket1 + `", "prefix": "mill/", "region": "us-east-1"}`,
			"is the same location as " + acme1},
	}
	for i, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			reg := string(good)
			label := `account "acme" store "4"`
			if a.account == "" {
				reg = strings.Replace(reg, "\n  {\"id\": \"3\", \"kind\": \"fs\"", "\n  "+a.store+",\n  {\"id\": \"3\", \"kind\": \"fs\"", 1)
			} else {
				label = `account "mallory" store "2"`
				reg = strings.TrimSuffix(strings.TrimSpace(reg), "]}") + ",\n" + alias(a.store) + "]}"
			}
			// Where the refused store starts: file:line:col.
			off := strings.Index(reg, a.store)
			line := strings.Count(reg[:off], "\n") + 1
			col := off - strings.LastIndex(reg[:off], "\n")
			file := filepath.Join(t.TempDir(), "accounts.json")
			must(t, os.WriteFile(file, []byte(reg), 0o644))
			at := fmt.Sprintf("%s:%d:%d: %s", file, line, col, label)

			// millctl stores validate FILE, and stores put into the
			// configuration directory.
			for _, args := range [][]string{{"stores", "validate", file}, {"stores", "put", "--config-dir", m.conf, file}} {
				code, stdout, stderr := run(t, bins["millctl"], m.env(), args...)
				if code != 1 || !strings.Contains(stderr, at) || !strings.Contains(stderr, a.want) {
					t.Errorf("millctl %s: exit %d, stderr:\n%s\nwant exit 1 and %q … %q", strings.Join(args[:2], " "), code, stderr, at, a.want)
				}
				if strings.Contains(stdout, ": ok") || strings.Contains(stdout, "stored") {
					t.Errorf("millctl %s reports success: %s", strings.Join(args[:2], " "), stdout)
				}
			}
			if now, err := os.ReadFile(filepath.Join(m.conf, "accounts.json")); err != nil || !bytes.Equal(now, good) {
				t.Fatalf("stores put changed accounts.json (%v)", err)
			}

			// workman and dupproducer on a configuration directory holding
			// the aliased registry (as if written there by hand).
			conf := t.TempDir()
			for _, f := range []string{"duplication-accounts.json", "acme-duplication-policy.json", "mallory-duplication-policy.json"} {
				b, err := os.ReadFile(filepath.Join(m.conf, f))
				must(t, err)
				must(t, os.WriteFile(filepath.Join(conf, f), b, 0o644))
			}
			must(t, os.WriteFile(filepath.Join(conf, "accounts.json"), []byte(reg), 0o644))
			at = strings.Replace(at, file, filepath.Join(conf, "accounts.json"), 1)

			if i == 0 { // the attack as found: the alias's DUP task waits in the queue
				m.send(queue.KeyDupHigh, dupTask, nil)
			}
			w := m.startWorkman("--config-dir", conf)
			select {
			case <-w.Done():
			case <-time.After(time.Minute):
				t.Fatal("workman runs on an aliased registry")
			}
			if out := w.Output(); w.ExitCode() != 1 || !strings.Contains(out, at) || !strings.Contains(out, a.want) {
				t.Errorf("workman: exit %d, output:\n%s\nwant exit 1 and %q … %q", w.ExitCode(), testbin.CutLines(out, 600), at, a.want)
			}

			state := filepath.Join(t.TempDir(), "state.json")
			code, _, stderr := run(t, bins["dupproducer"], m.env(), "--config-dir", conf, "--queue-prefix", m.prefix,
				"--state", state, "--frequency", "0", "--lease-table", m.prefix+"lease")
			if code == 0 || !strings.Contains(stderr, at) || !strings.Contains(stderr, a.want) {
				t.Errorf("dupproducer: exit %d, stderr:\n%s\nwant a failure and %q … %q", code, stderr, at, a.want)
			}
			if _, err := os.Stat(state); !os.IsNotExist(err) {
				t.Errorf("dupproducer wrote its state (%v)", err)
			}
		})
	}

	// The alias's DUP task was never taken: it is still queued, and nothing
	// else was.
	if n := m.depth(queue.KeyDupHigh); n != 1 {
		t.Errorf("dup-high holds %d messages, want the 1 DUP task never processed", n)
	}
	if n := m.depth(queue.KeyDupLow); n != 0 {
		t.Errorf("dup-low holds %d messages, want 0 (dupproducer queued from an aliased registry)", n)
	}
	if d := before.diff(m.snapshot(), func(string) bool { return false }); len(d) > 0 {
		t.Errorf("the stores changed:\n%s", strings.Join(d, "\n"))
	}
	for id, body := range items {
		for _, s := range []string{"1", "2", "3"} {
			if b, err := m.read(s, space, id); err != nil || string(b) != body {
				t.Errorf("store %s item %s: %q, %v; want it preserved", s, id, b, err)
			}
		}
	}
}

// run runs a binary to its end and returns its exit code and output.
func run(t *testing.T, bin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	p := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: bin, Args: args, Env: env})
	return p.ExitCode(), p.Stdout(), p.Stderr()
}

// TestAliasedBySymlink: mallory's store 2 is a symbolic link to acme's
// store 3 — roots that differ as written, so the registry passes, but one
// directory. Workman runs; the alias's DUP task (mirror mallory's empty
// store 1 onto "its" store 2, deleting what it holds) is dead-lettered at
// once as permanent, because the Opener resolves the link and does not
// open the store, and acme's store 3 is untouched.
func TestAliasedBySymlink(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	testbin.Build(t, "workman")
	m := newMill(t, ctx)
	for _, s := range []string{"1", "2", "3"} {
		m.put(s, space, "a", "alpha content")
	}
	tmp := t.TempDir()
	own, link := filepath.Join(tmp, "mallory-1"), filepath.Join(tmp, "mallory-2")
	must(t, os.MkdirAll(filepath.Join(own, space), 0o755))
	must(t, os.Symlink(m.root3, link))
	m.dirs = append(m.dirs, own)
	m.extraAccounts = fmt.Sprintf(`, {"id": "mallory", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": %q}, {"id": "2", "kind": "fs", "root": %q}]}`, own, link)
	m.writeConfig([]string{"mallory"}, map[string]string{
		"mallory-duplication-policy.json": `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`,
	})
	before := m.snapshot()
	w := m.startWorkman()
	m.send(queue.KeyDupHigh, dup(t, "mallory", "1", "2", space, "a"), nil)
	letters := m.deadLetters(1, time.Minute, w)
	if len(letters) != 1 || letters[0].Reason != workman.ReasonPermanent || !strings.Contains(letters[0].Error, "through symbolic links") || !strings.Contains(letters[0].Error, `account "acme" store "3"`) {
		var got []string
		for _, d := range letters {
			got = append(got, string(d.Reason)+": "+d.Error)
		}
		t.Errorf("dead letters %q, want the DUP refused naming acme's store 3 and the link", got)
	}
	w.alive(t)
	// Opening mallory's own store 1 makes its working directories there.
	if d := before.diff(m.snapshot(), func(p string) bool { return strings.HasPrefix(p, own+string(filepath.Separator)) }); len(d) > 0 {
		t.Errorf("the stores changed:\n%s", strings.Join(d, "\n"))
	}
	if b, err := m.read("3", space, "a"); err != nil || string(b) != "alpha content" {
		t.Errorf("acme store 3 item a: %q, %v", b, err)
	}
}
