package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/producers/bit"
)

// shippedRegistry is the example registry every other example is checked
// against.
const shippedRegistry = "accounts/accounts.json"

// TestShippedExamples checks every file under testdata/ with the loader
// Mill uses for it, and against the shipped registry: registries and
// policies load (the invalid/ ones and invalid.txt must not), every policy
// in force names registered accounts and their stores, filter patterns
// and messages name registered accounts and stores. A file no rule covers
// fails the test, so a new example is checked too.
func TestShippedExamples(t *testing.T) {
	root := filepath.Join("..", "..", "testdata")
	reg, err := stores.LoadFile(filepath.Join(root, shippedRegistry))
	if err != nil {
		t.Fatalf("the shipped registry: %v", err)
	}
	// knownStore reports whether a pattern's or a message's account and
	// store are registered; "*" and "prefix*" segments match any.
	knownStore := func(account, store string) bool {
		if strings.HasSuffix(account, "*") {
			return true
		}
		if reg.Account(account) == nil {
			return false
		}
		return store == "" || strings.HasSuffix(store, "*") || reg.Known(account)(store)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		dir, base := filepath.Dir(rel), filepath.Base(rel)
		invalid := strings.Contains(rel, "invalid")
		checked++
		fail := func(format string, args ...any) { t.Errorf(rel+": "+format, args...) }
		switch {
		case dir == "accounts" || dir == "accounts/invalid":
			_, err := stores.LoadFile(path)
			if invalid != (err != nil) {
				fail("stores.LoadFile: %v (want an error: %v)", err, invalid)
			}
		case (dir == "policies" || dir == "policies/invalid") && base == policy.AccountsFile:
			data := read(t, path)
			accts, err := policy.ParseAccounts(path, data)
			if err != nil {
				fail("%v", err)
			}
			for _, a := range accts {
				if reg.Account(a) == nil {
					fail("account %q is not in %s", a, shippedRegistry)
				}
			}
		case dir == "policies" || dir == "policies/invalid":
			account, ok := strings.CutSuffix(base, policy.PolicySuffix)
			if !ok {
				fail("not a policy file name (ACCOUNT%s)", policy.PolicySuffix)
				return nil
			}
			p, err := policy.Parse(path, read(t, path))
			if invalid != (err != nil) {
				fail("policy.Parse: %v (want an error: %v)", err, invalid)
			}
			if err != nil || invalid {
				return nil
			}
			if reg.Account(account) == nil {
				fail("account %q is not in %s", account, shippedRegistry)
			} else if err := p.Check(reg.Known(account)); err != nil {
				fail("against %s: %v", shippedRegistry, err)
			}
		case dir == "filters":
			ps, err := bit.LoadFilter(path)
			if wantErr := base == "invalid.txt"; wantErr != (err != nil) {
				fail("bit.LoadFilter: %v (want an error: %v)", err, wantErr)
			}
			for _, p := range ps {
				if !knownStore(p.Account, p.Store) {
					fail("%s: /%s/%s is not a store of %s", p.Source, p.Account, p.Store, shippedRegistry)
				}
			}
		case dir == "messages" && base == "README.md":
		case dir == "messages":
			tk, err := task.Decode(read(t, path))
			if err != nil {
				fail("task.Decode: %v", err)
				return nil
			}
			account := tk.Get("account")
			for _, k := range []string{"storeId", "destStoreId"} {
				if account != "" && !knownStore(account, tk.Get(k)) {
					fail("%s %s of account %q is not in %s", k, tk.Get(k), account, shippedRegistry)
				}
			}
		default:
			fail("no rule checks this example; add one to TestShippedExamples")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 30 {
		t.Fatalf("checked only %d files under %s", checked, root)
	}
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
