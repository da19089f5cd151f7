package dup_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/memauditlog"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/dup"
)

// logged records an audit entry of store 2 (the destination).
func logged(t *testing.T, l *memauditlog.Log, contentID string, action task.Action, user string, at time.Time) {
	t.Helper()
	if _, err := l.Put(context.Background(), auditlog.Entry{Account: acct, StoreID: "2", SpaceID: space, ContentID: contentID,
		Action: action, UserID: user, Time: at, Checksum: "c"}); err != nil {
		t.Fatal(err)
	}
}

// TestDestinationOnlySpaces: a space that exists only at the destination
// (no source space) and that a policy covers is left alone — its items
// and the space itself — unless the audit log shows Mill's duplication put
// them there; what it shows Mill wrote is deleted, as before.
func TestDestinationOnlySpaces(t *testing.T) {
	ctx := context.Background()
	spaceTask := task.Dup{Account: acct, StoreID: "1", DestStoreID: "2", SpaceID: space}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	exists := func(t *testing.T, e *env, id string) bool {
		t.Helper()
		_, err := e.dst.Head(ctx, space, id)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	spaceExists := func(t *testing.T, e *env) bool {
		_, err := e.dst.SpaceACLs(ctx, space)
		return err == nil
	}

	t.Run("created by a user on the secondary store", func(t *testing.T) {
		l := memauditlog.New()
		e := setup(t, nil, nil, func(c *dup.Config) { c.History = l })
		put(t, e.dst, "mine", "a user's own", nil)
		logged(t, l, "", task.ActionCreateSpace, "s3-event:arn:aws:iam::1:user/ann", t0)
		logged(t, l, "mine", task.ActionAddContent, "s3-event:arn:aws:iam::1:user/ann", t0.Add(time.Second))
		if a, err := run(t, e, dupTask("mine")); err != nil || a != dup.KeepDestinationOnly {
			t.Fatalf("item task: %v, %v; want keep-destination-only", a, err)
		}
		if !exists(t, e, "mine") {
			t.Fatal("the user's item was deleted")
		}
		if err := e.dst.Delete(ctx, space, "mine"); err != nil { // the user empties it
			t.Fatal(err)
		}
		if a, err := run(t, e, spaceTask); err != nil || a != dup.KeepDestinationOnly || !spaceExists(t, e) {
			t.Fatalf("space task: %v, %v; want the user's empty space left alone", a, err)
		}
		if n := e.audit.Len(); n != 0 {
			t.Errorf("%d writes audited", n)
		}
	})
	t.Run("no record at all", func(t *testing.T) {
		e := setup(t, nil, nil, nil) // no History: nothing can show Mill wrote it
		put(t, e.dst, "old", "from before Mill", nil)
		if a, err := run(t, e, dupTask("old")); err != nil || a != dup.KeepDestinationOnly || !exists(t, e, "old") {
			t.Fatalf("item task: %v, %v", a, err)
		}
	})
	t.Run("written by Mill's duplication", func(t *testing.T) {
		l := memauditlog.New()
		e := setup(t, nil, nil, func(c *dup.Config) { c.History = l })
		put(t, e.dst, "copied", "a copy", nil)
		put(t, e.dst, "overwritten", "a user's since", nil)
		logged(t, l, "", task.ActionCreateSpace, dup.UserID, t0)
		logged(t, l, "", task.ActionSetSpaceACLs, dup.UserID, t0)
		logged(t, l, "copied", task.ActionAddContent, dup.UserID, t0.Add(time.Second))
		logged(t, l, "overwritten", task.ActionAddContent, dup.UserID, t0.Add(time.Second))
		logged(t, l, "overwritten", task.ActionAddContent, "s3-event:arn:aws:iam::1:user/ann", t0.Add(2*time.Second))
		if a, err := run(t, e, dupTask("copied")); err != nil || a != dup.DeleteContent || exists(t, e, "copied") {
			t.Fatalf("Mill's copy: %v, %v; want deleted", a, err)
		}
		if a, err := run(t, e, dupTask("overwritten")); err != nil || a != dup.KeepDestinationOnly || !exists(t, e, "overwritten") {
			t.Fatalf("an item a user wrote over Mill's copy: %v, %v; want kept", a, err)
		}
		if a, err := run(t, e, spaceTask); err != nil || a != dup.KeepNonEmptySpace {
			t.Fatalf("space task: %v, %v", a, err)
		}
		if err := e.dst.Delete(ctx, space, "overwritten"); err != nil {
			t.Fatal(err)
		}
		if a, err := run(t, e, spaceTask); err != nil || a != dup.DeleteSpace || spaceExists(t, e) {
			t.Fatalf("space task: %v, %v; want Mill's empty space deleted", a, err)
		}
	})
	t.Run("created by Mill, deleted, created again by a user", func(t *testing.T) {
		l := memauditlog.New()
		e := setup(t, nil, nil, func(c *dup.Config) { c.History = l })
		if err := e.dst.CreateSpace(ctx, space); err != nil {
			t.Fatal(err)
		}
		logged(t, l, "", task.ActionCreateSpace, dup.UserID, t0)
		logged(t, l, "", task.ActionDeleteSpace, dup.UserID, t0.Add(time.Hour))
		logged(t, l, "", task.ActionCreateSpace, "ann", t0.Add(2*time.Hour))
		if a, err := run(t, e, spaceTask); err != nil || a != dup.KeepDestinationOnly || !spaceExists(t, e) {
			t.Fatalf("space task: %v, %v; want kept", a, err)
		}
	})
	t.Run("the source space exists: items are duplicated as before", func(t *testing.T) {
		e := setup(t, nil, nil, nil)
		put(t, e.src, "other", "o", nil)
		put(t, e.dst, "deleted-at-source", "d", nil)
		if a, err := run(t, e, dupTask("deleted-at-source")); err != nil || a != dup.DeleteContent {
			t.Fatalf("%v, %v; want delete", a, err)
		}
	})
}
