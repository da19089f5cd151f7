package audit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/memauditlog"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/audit"
)

// The source store of an AUDIT task is a claim: recorded as the task says
// when it names another registered store of the account on a content
// write, dropped (the rest recorded) otherwise, and it changes nothing
// else the task does.
func TestSourceStoreClaim(t *testing.T) {
	reg, err := stores.Parse("accounts.json", []byte(`{"accounts":[
	 {"id":"acme","status":"active","stores":[
	  {"id":"1","primary":true,"kind":"s3","bucket":"acme-1","region":"us-east-1"},
	  {"id":"2","kind":"s3","bucket":"acme-2","region":"us-east-1"},
	  {"id":"3","kind":"s3","bucket":"acme-3","region":"us-east-1"}]},
	 {"id":"other","status":"active","stores":[
	  {"id":"4","primary":true,"kind":"s3","bucket":"other-4","region":"us-east-1"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	prov := &fakeProvider{items: map[string]*storage.Info{}}
	var down bool // the registry's stores cannot be opened (a transient failure)
	newProc := func() (*audit.Processor, *memauditlog.Log, *memqueue.Queue) {
		log, dups := memauditlog.New(), memqueue.New("dup-high", memqueue.Config{})
		p, err := audit.New(audit.Config{Log: log, Index: memcontentindex.New(), DupHigh: dups,
			Policies: policies{"acme": mustPolicy(t, oneToTwoAndThree)}, Logger: testLogger(t),
			Stores: openerFunc(func(_ context.Context, account, store string) (storage.Provider, error) {
				if _, err := reg.Store(account, store); err != nil {
					return nil, err
				}
				if down {
					return nil, errors.New("connection refused")
				}
				return prov, nil
			})})
		if err != nil {
			t.Fatal(err)
		}
		return p, log, dups
	}
	write := func(store string, action task.Action, source string) *task.Task {
		a := task.Audit{Account: "acme", StoreID: store, SpaceID: "photos", ContentID: "a", Action: action,
			UserID: "mill-duplication", DateTime: t0, SourceStoreID: source}
		if action != task.ActionDeleteContent {
			a.ContentChecksum = "c1"
		}
		if action == task.ActionCopyContent {
			a.SourceSpaceID, a.SourceContentID = "photos", "a"
		}
		return a.Task()
	}
	for _, tc := range []struct {
		name string
		tk   *task.Task
		want string
	}{
		{"replication", write("2", task.ActionCopyContent, "1"), "1"},
		{"repair", write("2", task.ActionAddContent, "3"), "3"},
		{"unregistered store", write("2", task.ActionCopyContent, "9"), ""},
		{"store of another account", write("2", task.ActionCopyContent, "4"), ""},
		{"the copy written", write("2", task.ActionAddContent, "2"), ""},
		{"the copy written, by copy", write("2", task.ActionCopyContent, "2"), ""},
		{"not a content write", write("2", task.ActionDeleteContent, "1"), ""},
		{"hostile bytes", write("2", task.ActionCopyContent, "1\n\x00"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, log, _ := newProc()
			if err := p.Handle(context.Background(), tc.tk); err != nil {
				t.Fatal(err)
			}
			got, err := log.Latest(context.Background(), "acme", "2", "photos", "a")
			if err != nil {
				t.Fatal(err)
			}
			if got.SourceStoreID != tc.want {
				t.Errorf("recorded source store %q, want %q", got.SourceStoreID, tc.want)
			}
		})
	}
	// It authorises nothing: a store-1 write claiming store 3 as its
	// source is duplicated by the policies alone, as one claiming none.
	prov.items["photos/a"] = &storage.Info{ContentID: "a", Checksum: "c1", Modified: t0}
	for _, source := range []string{"", "3"} {
		p, _, dups := newProc()
		if err := p.Handle(context.Background(), write("1", task.ActionAddContent, source)); err != nil {
			t.Fatal(err)
		}
		var dests []string
		for _, d := range dupsOf(t, drain(t, dups)) {
			dests = append(dests, d.StoreID+"→"+d.DestStoreID)
		}
		if len(dests) != 2 || dests[0] != "1→2" || dests[1] != "1→3" {
			t.Errorf("source %q: DUP tasks %v, want 1→2 and 1→3", source, dests)
		}
	}
	// A registry that cannot be asked is retried, with nothing recorded.
	down = true
	p, log, _ := newProc()
	err = p.Handle(context.Background(), write("2", task.ActionCopyContent, "1"))
	if err == nil || processors.IsPermanent(err) {
		t.Fatalf("Handle with the stores down = %v, want a retryable error", err)
	}
	if _, err := log.Latest(context.Background(), "acme", "2", "photos", "a"); !errors.Is(err, auditlog.ErrNotFound) {
		t.Errorf("an entry was recorded: %v", err)
	}
}
