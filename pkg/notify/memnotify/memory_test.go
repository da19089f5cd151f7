package memnotify_test

import (
	"context"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/notify/memnotify"
)

func TestMemory(t *testing.T) {
	e := notify.SpaceCreated("acme", "1", "photos", "ana", time.Date(2026, 5, 1, 2, 3, 4, 0, time.UTC))
	var m memnotify.Notifier
	_ = m.Notify(context.Background(), e)
	if got := m.Events(); len(got) != 1 || got[0].Subject != e.Subject {
		t.Errorf("Memory kept %+v", got)
	}
}
