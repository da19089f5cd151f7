package policy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/policy"
)

// inForceDir: "listed" is in duplication-accounts.json with a policy,
// "unlisted" has a policy file only, "fileless" is listed without one.
func inForceDir(t *testing.T) policy.Reader {
	t.Helper()
	d := t.TempDir()
	for name, data := range map[string]string{
		policy.AccountsFile:         `["listed", "fileless"]`,
		policy.FileName("listed"):   `{"spaceDuplicationStorePolicies": {"photos": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "1", "destStoreId": "3"}], "empty": []}, "defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}], "spacesToIgnore": ["scratch"]}`,
		policy.FileName("unlisted"): `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`,
	} {
		if err := os.WriteFile(filepath.Join(d, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return policy.NewDir(d)
}

// The policies in force need both files: an account with a policy file
// that is not listed in duplication-accounts.json is not duplicated.
func TestInForceNeedsBothFiles(t *testing.T) {
	ctx := context.Background()
	r := inForceDir(t)
	p, err := policy.InForce(ctx, r, "listed")
	if err != nil || len(p.StorePolicies("photos")) != 2 {
		t.Fatalf("InForce(listed) = %v, %v", p, err)
	}
	for account, rule := range map[string]policy.Rule{"unlisted": policy.RuleAccountNotListed, "fileless": policy.RuleNoPolicyFile, "ghost": policy.RuleAccountNotListed} {
		_, err := policy.InForce(ctx, r, account)
		var ref *policy.Refusal
		if !errors.Is(err, policy.ErrNotFound) || !errors.As(err, &ref) || ref.Rule != rule {
			t.Errorf("InForce(%s) = %v, want a %s refusal wrapping ErrNotFound", account, err, rule)
		}
	}
}

// Authorize checks one duplication (account, space, source, destination)
// against the policies in force; every refusal names its rule.
func TestAuthorize(t *testing.T) {
	ctx := context.Background()
	r := inForceDir(t)
	for _, tc := range []struct {
		account, space, src, dst string
		want                     string // "" allowed, else the refusal's text
	}{
		{"listed", "photos", "1", "3", ""},
		{"listed", "other", "1", "2", ""}, // by the default
		{"listed", "empty", "1", "2", ""}, // an empty list follows the default
		{"listed", "photos", "2", "1", `policy: no-store-policy: listed/photos: no store policy 2→1 (the space's store policies: 1→2, 1→3)`},
		{"listed", "other", "1", "3", `policy: no-store-policy: listed/other: no store policy 1→3 (the space's store policies: 1→2)`},
		{"listed", "x-work", "1", "2", `policy: system-space: listed/x-work: spaces starting with "x-" are never duplicated`},
		{"listed", "scratch", "1", "2", `policy: ignored-space: listed/scratch: the space is in spacesToIgnore`},
		{"unlisted", "photos", "1", "2", `policy: account-not-listed: account "unlisted" is not listed in duplication-accounts.json`},
		{"fileless", "photos", "1", "2", `policy: no-policy-file: account "fileless" is listed in duplication-accounts.json but has no fileless-duplication-policy.json`},
	} {
		_, err := policy.Authorize(ctx, r, tc.account, tc.space, tc.src, tc.dst)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("Authorize(%s, %s, %s→%s) = %q\nwant %q", tc.account, tc.space, tc.src, tc.dst, got, tc.want)
		}
	}
}

// A store that is the source of a store policy of a space is never
// deleted from or overwritten by duplication in that space.
func TestMayDestroy(t *testing.T) {
	p, err := policy.Parse("p.json", []byte(`{"spaceDuplicationStorePolicies": {"chain": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "2", "destStoreId": "3"}]}, "defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.MayDestroy("acme", "other", "2", "delete"); err != nil {
		t.Fatalf("store 2 of other: %v", err)
	}
	err = p.MayDestroy("acme", "chain", "2", "delete acme/chain/x")
	var ref *policy.Refusal
	if !errors.As(err, &ref) || ref.Rule != policy.RuleSourceStore ||
		err.Error() != `policy: source-store: acme/chain: store 2 is the source of store policy 2→3, so duplication never deletes or overwrites there (refused: delete acme/chain/x)` {
		t.Fatalf("MayDestroy(chain, 2) = %v", err)
	}
	if err := p.MayDestroy("acme", "other", "1", "overwrite"); err == nil || !strings.Contains(err.Error(), "store 1 is the source of store policy 1→2") {
		t.Fatalf("MayDestroy(other, 1) = %v", err)
	}
}

// Chains are valid, but their middle store is protected (MayDestroy):
// Relays names them so validate and put can say so.
func TestRelays(t *testing.T) {
	p, err := policy.Parse("p.json", []byte(`{"spaceDuplicationStorePolicies": {"chain": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "2", "destStoreId": "3"}], "fan": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "1", "destStoreId": "3"}]}, "defaultPolicies": [{"srcStoreId": "4", "destStoreId": "1"}, {"srcStoreId": "1", "destStoreId": "5"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`space "chain": store 2 receives 1→2 and is the source of 2→3: duplication copies new items into it but never deletes or overwrites there`,
		`defaultPolicies: store 1 receives 4→1 and is the source of 1→5: duplication copies new items into it but never deletes or overwrites there`,
	}
	if got := p.Relays(); !slices.Equal(got, want) {
		t.Fatalf("Relays =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
