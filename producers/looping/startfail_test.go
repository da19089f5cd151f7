package looping_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/notify/memnotify"
	"github.com/millfleet/mill/producers/looping"
)

// TestFailureBeforeTheRunStarts: an invocation that fails before a run
// starts (the morsels cannot be listed) is announced as such — never as
// "run  failed" with an empty run ID, nor with an empty run_id attribute
// or a "run  started 0001-01-01" line.
func TestFailureBeforeTheRunStarts(t *testing.T) {
	e := newEnv(t)
	var n memnotify.Notifier
	cfg := e.config(t, looping.ProducerFuncs{
		MorselsFunc: func(context.Context, looping.RunInfo) ([]looping.Morsel, error) {
			return nil, errors.New("duplication-accounts.json: access denied")
		},
		BiteFunc: func(context.Context, looping.RunInfo, looping.Morsel, int, looping.Emit) (looping.BiteResult, error) {
			t.Error("a bite without a run")
			return looping.BiteResult{}, nil
		},
	}.AsProducer())
	cfg.Notifier = &n
	sum, err := mustNew(t, cfg).Run(context.Background())
	if err == nil || sum.RunID != "" {
		t.Fatalf("Run = %+v, %v; want a failure before any run", sum, err)
	}
	evs := n.Events()
	if len(evs) != 1 || evs[0].Type != notify.EventRunFailed {
		t.Fatalf("notifications %+v, want one failure", evs)
	}
	ev := evs[0]
	if strings.Contains(ev.Subject, "run  ") || !strings.Contains(ev.Subject, "before a run started") {
		t.Errorf("subject %q", ev.Subject)
	}
	if _, ok := ev.Attrs()[notify.AttrRunID]; ok {
		t.Errorf("attributes %v: an empty run_id", ev.Attrs())
	}
	if strings.Contains(ev.Body, "run  ") || strings.Contains(ev.Body, "0001-01-01") || !strings.Contains(ev.Body, "access denied") {
		t.Errorf("body:\n%s", ev.Body)
	}
}
