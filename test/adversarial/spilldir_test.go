package adversarial

import (
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

// TestHostileListSpillDir: mallory's fs store names a listSpillDir (where
// it sorts large listings) among acme's content. As written — relative,
// with "..", inside acme's root, or mallory's own root — millctl stores
// validate refuses it, naming the file, line, column, store and key.
// Through a symbolic link the registry passes, but Workman does not open
// the store: a DUP task from it is dead-lettered at once as permanent,
// naming the key and acme's store, and acme's store 3 is untouched.
func TestHostileListSpillDir(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	testbin.Build(t, "workman")
	bins := testbin.Build(t, "millctl")
	m := newMill(t, ctx)
	for _, s := range []string{"1", "2", "3"} {
		m.put(s, space, "a", "alpha content")
	}
	tmp := t.TempDir()
	own1, own2, link := filepath.Join(tmp, "mallory-1"), filepath.Join(tmp, "mallory-2"), filepath.Join(tmp, "spill")
	for _, d := range []string{filepath.Join(own1, space), own2} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.Symlink(filepath.Join(m.root3, space), link))
	m.dirs = append(m.dirs, own1, own2)
	mallory := func(spill string) string {
		return fmt.Sprintf(`, {"id": "mallory", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": %q, "listSpillDir": %q}, {"id": "2", "kind": "fs", "root": %q}]}`, own1, spill, own2)
	}
	for _, a := range []struct{ name, spill, want string }{
		{"relative", "spill", `listSpillDir "spill" is not an absolute path`},
		{"through ..", m.root3 + "/../store3/" + space, `has a ".." segment`},
		{"inside acme's root", filepath.Join(m.root3, space), fmt.Sprintf(`lies inside the root of account "acme" store "3" (root %q)`, m.root3)},
		{"its own root", own1, fmt.Sprintf(`is the root of account "mallory" store "1" (root %q)`, own1)},
	} {
		t.Run(a.name, func(t *testing.T) {
			m.extraAccounts = mallory(a.spill)
			m.writeConfig([]string{"mallory"}, nil)
			file := filepath.Join(m.conf, "accounts.json")
			reg, err := os.ReadFile(file)
			must(t, err)
			off := strings.Index(string(reg), `{"id": "1", "primary": true, "kind": "fs"`)
			line := strings.Count(string(reg[:off]), "\n") + 1
			col := off - strings.LastIndex(string(reg[:off]), "\n")
			at := fmt.Sprintf(`%s:%d:%d: account "mallory" store "1": listSpillDir`, file, line, col)
			code, stdout, stderr := run(t, bins["millctl"], m.env(), "stores", "validate", file)
			if code != 1 || !strings.Contains(stderr, at) || !strings.Contains(stderr, a.want) || strings.Contains(stdout, ": ok") {
				t.Errorf("millctl stores validate: exit %d, stdout %q, stderr:\n%s\nwant exit 1 and %q … %q", code, stdout, stderr, at, a.want)
			}
		})
	}

	m.extraAccounts = mallory(link)
	m.writeConfig([]string{"mallory"}, map[string]string{
		"mallory-duplication-policy.json": `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`,
	})
	if code, _, stderr := run(t, bins["millctl"], m.env(), "stores", "validate", filepath.Join(m.conf, "accounts.json")); code != 0 {
		t.Fatalf("millctl stores validate refused a link it cannot resolve elsewhere: exit %d\n%s", code, stderr)
	}
	before := m.snapshot()
	w := m.startWorkman()
	m.send(queue.KeyDupHigh, dup(t, "mallory", "1", "2", space, "a"), nil)
	letters := m.deadLetters(1, time.Minute, w)
	if len(letters) != 1 {
		t.Fatalf("%d dead letters, want the DUP task's", len(letters))
	}
	for _, want := range []string{fmt.Sprintf("listSpillDir %q", link), `lies inside the root of account "acme" store "3"`} {
		if d := letters[0]; d.Reason != workman.ReasonPermanent || !strings.Contains(d.Error, want) {
			t.Errorf("dead letter %s: %s; want permanent, saying %s", d.Reason, d.Error, want)
		}
	}
	w.alive(t)
	if d := before.diff(m.snapshot(), func(p string) bool { return strings.HasPrefix(p, own2+string(filepath.Separator)) }); len(d) > 0 {
		t.Errorf("the stores changed:\n%s", strings.Join(d, "\n"))
	}
	if b, err := m.read("3", space, "a"); err != nil || string(b) != "alpha content" {
		t.Errorf("acme store 3 item a: %q, %v", b, err)
	}
}
