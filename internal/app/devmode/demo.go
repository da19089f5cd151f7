package devmode

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/audited"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/dup"
)

// The demo is what `millctl dev` runs in memory and `millctl dev load`
// puts on the local emulator (or AWS): two accounts, their stores, their
// duplication policies and generated content. Both go through these
// functions, so they show the same mill.

// DemoStores are the demo's accounts and their store ids; the first store
// of each is its primary.
var DemoStores = []struct {
	Account string
	Stores  []string
}{
	{"acme", []string{"1", "2", "3"}},
	{"globex", []string{"1", "2"}},
}

// DemoRegistry returns the demo's registry; store makes each store (a
// directory for the dev mode, a bucket for dev load) from its account, id
// and whether it is the primary.
func DemoRegistry(store func(account, id string, primary bool) stores.Store) (*stores.Registry, error) {
	reg := &stores.Registry{}
	for _, a := range DemoStores {
		acct := stores.Account{ID: a.Account, Status: stores.StatusActive}
		for i, id := range a.Stores {
			acct.Stores = append(acct.Stores, store(a.Account, id, i == 0))
		}
		reg.Accounts = append(reg.Accounts, acct)
	}
	return reg, reg.Validate()
}

// DemoPolicies returns the demo's duplication policies by account: acme's
// photos go to two destinations, its docs to one, its scratch space is
// ignored; every space of globex follows the default policy.
func DemoPolicies() map[string]*policy.Policy {
	sp := func(src, dst string) policy.StorePolicy { return policy.StorePolicy{SrcStoreID: src, DestStoreID: dst} }
	return map[string]*policy.Policy{
		"acme": {
			SpacePolicies: map[string][]policy.StorePolicy{
				"photos": {sp("1", "2"), sp("1", "3")},
				"docs":   {sp("1", "2")},
			},
			Ignore: []string{"scratch"},
		},
		"globex": {Default: []policy.StorePolicy{sp("1", "2")}},
	}
}

// demoSpaces of the demo: account, space, how item IDs look, mimetype.
var demoSpaces = []struct{ account, space, pattern, mime string }{
	{"acme", "photos", "2025/img-%04d.jpg", "image/jpeg"},
	{"acme", "docs", "reports/doc-%04d.pdf", "application/pdf"},
	{"acme", "scratch", "tmp-%04d.bin", "application/octet-stream"},
	{"globex", "media", "video/clip-%04d.mp4", "video/mp4"},
	{"globex", "reports", "r-%04d.csv", "text/csv"},
}

var owners = []string{"ana", "bo", "chen", "dee"}

// Opener opens a store of the registry.
type Opener func(ctx context.Context, account, storeID string) (storage.Provider, error)

// Seeded is what Seed wrote.
type Seeded struct {
	Spaces, Items int
	Bytes         int64
	// IDs are the content IDs written, by "account/space".
	IDs map[string][]string
}

// SeedConfig configures Seed.
type SeedConfig struct {
	Registry *stores.Registry
	Open     Opener
	// Audit receives the AUDIT tasks of the writes, in Format.
	Audit  queue.Queue
	Format task.Format
	// UserID is recorded in the AUDIT tasks (default "demo-seed").
	UserID string
	// Items is the number of items (at least MinItems); Seed makes their
	// content, sizes and properties.
	Items int
	Seed  uint64
}

// Seed creates the demo's spaces on each account's primary store and
// writes Items generated items into them through the audited providers,
// so an AUDIT task is queued for every change, as in production.
func Seed(ctx context.Context, cfg SeedConfig) (*Seeded, error) {
	if cfg.Items < MinItems {
		return nil, fmt.Errorf("devmode: at least %d items (one per space)", MinItems)
	}
	if cfg.UserID == "" {
		cfg.UserID = "demo-seed"
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6d696c6c))
	out := &Seeded{IDs: map[string][]string{}}
	prov := map[string]storage.Provider{}
	audit := func(account string) (storage.Provider, error) {
		if p, ok := prov[account]; ok {
			return p, nil
		}
		a := cfg.Registry.Account(account)
		if a == nil || a.Primary() == nil {
			return nil, fmt.Errorf("devmode: account %q has no primary store in the registry", account)
		}
		raw, err := cfg.Open(ctx, account, a.Primary().ID)
		if err != nil {
			return nil, err
		}
		p, err := audited.New(raw, cfg.Audit, audited.Config{Account: account, StoreID: a.Primary().ID, StoreKind: a.Primary().Kind,
			UserID: cfg.UserID, Format: cfg.Format})
		if err != nil {
			return nil, err
		}
		prov[account] = p
		return p, nil
	}
	for _, s := range demoSpaces {
		p, err := audit(s.account)
		if err != nil {
			return nil, err
		}
		if err := p.CreateSpace(ctx, s.space); err != nil {
			return nil, err
		}
		if err := p.SetSpaceACLs(ctx, s.space, map[string]string{"acl-" + owners[rng.IntN(len(owners))]: "WRITE"}); err != nil {
			return nil, err
		}
		out.Spaces++
	}
	buf := make([]byte, 64<<10)
	for i := range cfg.Items {
		s := demoSpaces[i%len(demoSpaces)]
		if i >= len(demoSpaces) {
			s = demoSpaces[rng.IntN(len(demoSpaces))]
		}
		p, err := audit(s.account)
		if err != nil {
			return nil, err
		}
		size := 256 + rng.IntN(8<<10)
		if rng.IntN(20) == 0 {
			size = 16<<10 + rng.IntN(48<<10)
		}
		data := buf[:size]
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		id := fmt.Sprintf(s.pattern, i)
		sum := md5.Sum(data)
		_, err = p.Put(ctx, s.space, id, strings.NewReader(string(data)), storage.PutOptions{
			Size: int64(size), Checksum: hex.EncodeToString(sum[:]), MimeType: s.mime,
			Properties: map[string]string{"owner": owners[rng.IntN(len(owners))], "seq": fmt.Sprint(i)},
		})
		if err != nil {
			return nil, fmt.Errorf("put %s/%s/%s: %w", s.account, s.space, id, err)
		}
		k := s.account + "/" + s.space
		out.IDs[k] = append(out.IDs[k], id)
		out.Items++
		out.Bytes += int64(size)
	}
	return out, nil
}

// Replicas is what CheckReplicas found.
type Replicas struct {
	// Matching counts destination items equal to their source (checksum
	// and user properties); Policies counts the store policies applied to
	// the demo's spaces.
	Matching, Policies int
	// Problems lists every item missing at, or differing on, a destination.
	Problems []string
}

// CheckReplicas compares every destination of every store policy of the
// demo's spaces with its source: the same IDs, checksums and user
// properties.
func CheckReplicas(ctx context.Context, reg *stores.Registry, pols policy.Reader, open Opener) (*Replicas, error) {
	r := &Replicas{}
	for _, a := range reg.Accounts {
		pol, err := pols.Policy(ctx, a.ID)
		if err != nil {
			return nil, err
		}
		for _, s := range demoSpaces {
			if s.account != a.ID {
				continue
			}
			for _, sp := range pol.StorePolicies(s.space) {
				r.Policies++
				src, err := open(ctx, a.ID, sp.SrcStoreID)
				if err != nil {
					return nil, err
				}
				dst, err := open(ctx, a.ID, sp.DestStoreID)
				if err != nil {
					return nil, err
				}
				for m, err := range storage.MergeSorted(storage.Walk(ctx, src, s.space, "", 0), storage.Walk(ctx, dst, s.space, "", 0)) {
					if err != nil {
						return nil, err
					}
					where := fmt.Sprintf("%s/%s %s→%s %s", a.ID, s.space, sp.SrcStoreID, sp.DestStoreID, m.ID)
					if !m.Both {
						r.Problems = append(r.Problems, "not duplicated: "+where)
						continue
					}
					si, err1 := src.Head(ctx, s.space, m.ID)
					di, err2 := dst.Head(ctx, s.space, m.ID)
					if err := errors.Join(err1, err2); err != nil {
						return nil, err
					}
					if !dup.InSync(si, di) || !storage.PropertiesEqual(si.Properties, di.Properties) {
						r.Problems = append(r.Problems, "replica differs: "+where)
						continue
					}
					r.Matching++
				}
			}
		}
	}
	return r, nil
}

// StoreCopies is how many (space, store) pairs the demo's content lives
// on once it is duplicated: each space on its primary and on every
// destination of its store policies. The bit producer checks, and
// reports, each pair once per run.
func StoreCopies(pols map[string]*policy.Policy) int {
	n := 0
	for _, s := range demoSpaces {
		n++ // the primary
		dests := map[string]bool{}
		for _, sp := range pols[s.account].StorePolicies(s.space) {
			dests[sp.DestStoreID] = true
		}
		n += len(dests)
	}
	return n
}
