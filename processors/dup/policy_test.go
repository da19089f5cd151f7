package dup_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/dup"
)

// policies is a policy.Reader: listed accounts and their policy files.
type policies struct {
	listed []string
	files  map[string]*policy.Policy
}

func (p policies) Accounts(context.Context) ([]string, error) { return p.listed, nil }

func (p policies) Policy(_ context.Context, a string) (*policy.Policy, error) {
	if pol, ok := p.files[a]; ok {
		return pol, nil
	}
	return nil, policy.ErrNotFound
}

// allow returns the policies in force of acct: the policy file js, listed.
func allow(t testing.TB, js string) policies {
	t.Helper()
	pol, err := policy.Parse("acme-duplication-policy.json", []byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return policies{listed: []string{acct}, files: map[string]*policy.Policy{acct: pol}}
}

// oneToTwo is the policy setup uses: every space of store 1 goes to 2.
const oneToTwo = `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}], "spacesToIgnore": ["scratch"]}`

// refused checks that err is a permanent refusal naming rule.
func refused(t *testing.T, err error, rule policy.Rule) {
	t.Helper()
	var ref *policy.Refusal
	if !processors.IsPermanent(err) || !errors.As(err, &ref) || ref.Rule != rule || !strings.Contains(err.Error(), "policy: "+string(rule)+": ") {
		t.Fatalf("err = %v; want a permanent %s refusal", err, rule)
	}
}

// A DUP task is a request, not an authority: one the policies in force do
// not allow is dead-lettered (permanent, the rule named) before any store
// is touched. A forged 2→1 task used to delete the only copy from the
// primary store 1.
func TestTasksThePoliciesDoNotAllowAreRefused(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		pols policy.Reader
		d    task.Dup
		rule policy.Rule
	}{
		{"reverse direction", allow(t, oneToTwo), task.Dup{Account: acct, StoreID: "2", DestStoreID: "1", SpaceID: space, ContentID: "only-copy"}, policy.RuleNoStorePolicy},
		{"reverse direction, space task", allow(t, oneToTwo), task.Dup{Account: acct, StoreID: "2", DestStoreID: "1", SpaceID: space}, policy.RuleNoStorePolicy},
		{"system space", allow(t, oneToTwo), task.Dup{Account: acct, StoreID: "1", DestStoreID: "2", SpaceID: "x-work", ContentID: "only-copy"}, policy.RuleSystemSpace},
		{"ignored space", allow(t, oneToTwo), task.Dup{Account: acct, StoreID: "1", DestStoreID: "2", SpaceID: "scratch", ContentID: "only-copy"}, policy.RuleIgnoredSpace},
		{"space of another policy", allow(t, `{"spaceDuplicationStorePolicies": {"photos": [{"srcStoreId": "2", "destStoreId": "1"}]}}`),
			task.Dup{Account: acct, StoreID: "1", DestStoreID: "2", SpaceID: "other", ContentID: "only-copy"}, policy.RuleNoStorePolicy},
		{"account not listed", policies{files: allow(t, oneToTwo).files}, task.Dup{Account: acct, StoreID: "1", DestStoreID: "2", SpaceID: space, ContentID: "only-copy"}, policy.RuleAccountNotListed},
		{"no policy file", policies{listed: []string{acct}}, task.Dup{Account: acct, StoreID: "1", DestStoreID: "2", SpaceID: space, ContentID: "only-copy"}, policy.RuleNoPolicyFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spies [2]*writeSpy
			e := setup(t, func(p storage.Provider) storage.Provider { spies[0] = &writeSpy{Provider: p}; return spies[0] },
				func(p storage.Provider) storage.Provider { spies[1] = &writeSpy{Provider: p}; return spies[1] },
				func(c *dup.Config) {
					c.Policies = tc.pols
					// The index lists nothing: only the policies stand
					// between the task and a delete.
					c.Live = dup.LiveCheckerFunc(func(context.Context, string, string, string, string) (bool, error) { return false, nil })
				})
			// The only copy of every item is at the task's destination
			// (and a source space exists, so nothing else stops a delete).
			for _, s := range []*spaceStore{{e.src, "1"}, {e.dst, "2"}} {
				if s.id == tc.d.DestStoreID {
					put(t, s.p, "only-copy", "precious", nil)
					if tc.d.SpaceID != space {
						if err := s.p.CreateSpace(ctx, tc.d.SpaceID); err != nil {
							t.Fatal(err)
						}
						if _, err := s.p.Put(ctx, tc.d.SpaceID, "only-copy", strings.NewReader("precious"), storage.PutOptions{Size: 8}); err != nil {
							t.Fatal(err)
						}
					}
				} else if err := s.p.CreateSpace(ctx, tc.d.SpaceID); err != nil {
					t.Fatal(err)
				}
			}
			err := e.proc.Handle(ctx, tc.d.Task())
			refused(t, err, tc.rule)
			for _, s := range []*spaceStore{{e.src, "1"}, {e.dst, "2"}} {
				if s.id != tc.d.DestStoreID {
					continue
				}
				if _, err := s.p.Head(ctx, tc.d.SpaceID, "only-copy"); err != nil {
					t.Errorf("the only copy at store %s: %v", s.id, err)
				}
			}
			if n := e.audit.Len(); n != 0 {
				t.Errorf("%d AUDIT tasks for a refused task", n)
			}
			for i, s := range spies {
				if n := s.writes.Load(); n > 0 {
					t.Errorf("%d writes reached store %d", n, i+1)
				}
			}
		})
	}
}

type spaceStore struct {
	p  storage.Provider
	id string
}

// A store that is the source of a store policy of the space (here 2, in
// the chain 1→2→3) only ever receives new items from duplication: deletes
// and overwrites there are refused.
func TestSourceStoresAreNeverDestroyed(t *testing.T) {
	ctx := context.Background()
	chain := `{"spaceDuplicationStorePolicies": {"photos": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "2", "destStoreId": "3"}]}}`
	e := setup(t, nil, nil, func(c *dup.Config) { c.Policies = allow(t, chain) })
	put(t, e.src, "new", "new item", nil)
	put(t, e.src, "changed", "version 2", nil)
	put(t, e.dst, "changed", "version 1", nil)
	put(t, e.src, "props", "same", map[string]string{"k": "new"})
	put(t, e.dst, "props", "same", map[string]string{"k": "old"})
	put(t, e.dst, "only-at-2", "kept", nil)

	if a, err := run(t, e, dupTask("new")); err != nil || a != dup.CopyContent {
		t.Fatalf("new item: %v, %v; want copy", a, err)
	}
	for _, id := range []string{"changed", "props", "only-at-2"} {
		err := e.proc.Handle(ctx, dupTask(id).Task())
		refused(t, err, policy.RuleSourceStore)
		if !strings.Contains(err.Error(), "store 2 is the source of store policy 2→3") {
			t.Errorf("%s: %v", id, err)
		}
	}
	if body, _ := read(t, e.dst, "changed"); body != "version 1" {
		t.Errorf("overwritten: %q", body)
	}
	if _, info := read(t, e.dst, "props"); info.Properties["k"] != "old" {
		t.Errorf("properties overwritten: %v", info.Properties)
	}
	if body, _ := read(t, e.dst, "only-at-2"); body != "kept" {
		t.Errorf("deleted: %q", body)
	}
	if got := strings.Join(e.auditActions(t), ","); got != "ADD_CONTENT" {
		t.Errorf("audited %s, want only the new item", got)
	}
}

// Unknown accounts and stores, and IDs no store accepts, are permanent at
// once: retrying cannot make them exist.
func TestUnresolvableTasksArePermanent(t *testing.T) {
	ctx := context.Background()
	e := setup(t, nil, nil, func(c *dup.Config) {
		c.Policies = allow(t, `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "1", "destStoreId": "9"}]}`)
		inner := c.Opener
		c.Opener = openerFunc(func(ctx context.Context, a, s string) (storage.Provider, error) {
			if s == "9" {
				return nil, fmt.Errorf("%w %q of account %q", stores.ErrUnknownStore, s, a)
			}
			return inner.Open(ctx, a, s)
		})
	})
	err := e.proc.Handle(ctx, task.Dup{Account: acct, StoreID: "1", DestStoreID: "9", SpaceID: space, ContentID: "x"}.Task())
	if !processors.IsPermanent(err) || !errors.Is(err, stores.ErrUnknownStore) {
		t.Errorf("unknown store: %v; want permanent", err)
	}
	for _, d := range []task.Dup{
		{Account: acct, StoreID: "1", DestStoreID: "2", SpaceID: "a/b", ContentID: "x"},
		{Account: acct, StoreID: "1", DestStoreID: "2", SpaceID: ".hidden"},
		{Account: acct, StoreID: "1", DestStoreID: "2", SpaceID: space, ContentID: "bad\x00id"},
	} {
		err := e.proc.Handle(ctx, d.Task())
		if !processors.IsPermanent(err) || !errors.Is(err, storage.ErrInvalidID) {
			t.Errorf("%q/%q: %v; want permanent ErrInvalidID", d.SpaceID, d.ContentID, err)
		}
	}
}

type openerFunc func(ctx context.Context, account, storeID string) (storage.Provider, error)

func (f openerFunc) Open(ctx context.Context, account, storeID string) (storage.Provider, error) {
	return f(ctx, account, storeID)
}

// A destination whose mimetype differs from the source's is brought in
// line, as the Java Mill does (it compares the content-mimetype property).
func TestMimetypeIsDuplicated(t *testing.T) {
	ctx := context.Background()
	e := setup(t, nil, nil, nil)
	put(t, e.src, "x", "same bytes", map[string]string{"k": "v"}) // text/plain
	if err := e.dst.CreateSpace(ctx, space); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dst.Put(ctx, space, "x", strings.NewReader("same bytes"), storage.PutOptions{Size: 10, MimeType: "application/octet-stream", Properties: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	if a, err := run(t, e, dupTask("x")); err != nil || a != dup.CopyContent {
		t.Fatalf("Process = %v, %v; want copy", a, err)
	}
	if _, info := read(t, e.dst, "x"); info.MimeType != "text/plain" {
		t.Errorf("destination mimetype %q", info.MimeType)
	}
	if a, err := run(t, e, dupTask("x")); err != nil || a != dup.None {
		t.Errorf("again: %v, %v; want none", a, err)
	}
}

// gatedCreate holds CreateSpace until its gate is closed.
type gatedCreate struct {
	storage.Provider
	gate chan struct{}
}

func (g *gatedCreate) CreateSpace(ctx context.Context, s string) error {
	<-g.gate
	return g.Provider.CreateSpace(ctx, s)
}

// The first duplication into a new destination space creates it (and
// audits CREATE_SPACE) once, however many DUP tasks of the space run at
// once: 7 items and the space task used to audit it 8 times.
func TestNewDestinationSpaceIsCreatedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		gate := make(chan struct{})
		e := setup(t, nil, func(p storage.Provider) storage.Provider { return &gatedCreate{Provider: p, gate: gate} }, nil)
		var tasks []task.Dup
		for i := range 7 {
			id := fmt.Sprintf("item-%d", i)
			put(t, e.src, id, "content "+id, nil)
			tasks = append(tasks, dupTask(id))
		}
		tasks = append(tasks, task.Dup{Account: acct, StoreID: "1", DestStoreID: "2", SpaceID: space})
		var wg sync.WaitGroup
		for _, d := range tasks {
			wg.Go(func() {
				if _, err := e.proc.Process(ctx, d); err != nil {
					t.Errorf("%s: %v", d.ContentID, err)
				}
			})
		}
		synctest.Wait() // every task is at CreateSpace, or waiting for it
		close(gate)
		wg.Wait()
		creates := 0
		for _, a := range e.auditActions(t) {
			if a == "CREATE_SPACE" {
				creates++
			}
		}
		if creates != 1 {
			t.Fatalf("CREATE_SPACE audited %d times, want 1", creates)
		}
		ids, _, err := e.dst.ListContent(ctx, space, "", 100)
		if err != nil || len(ids) != 7 {
			t.Fatalf("destination holds %v, %v", ids, err)
		}
	})
}
