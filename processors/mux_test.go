package processors_test

import (
	"context"
	"errors"
	"testing"

	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/noop"
)

func TestMuxRoutesByType(t *testing.T) {
	m := processors.NewMux()
	var got []task.Type
	m.RegisterFunc(task.TypeBit, func(ctx context.Context, tk *task.Task) error { got = append(got, tk.Type); return nil })
	m.Register(task.TypeNoop, noop.New(noop.Config{}))
	h := m
	if err := h.Handle(context.Background(), task.New(task.TypeBit, nil)); err != nil {
		t.Fatal(err)
	}
	if err := h.Handle(context.Background(), task.New(task.TypeNoop, nil)); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != task.TypeBit {
		t.Fatalf("BIT handler saw %v", got)
	}
	if n := m.ProcessorName(task.TypeNoop); n != "noop" {
		t.Errorf("ProcessorName(NOOP) = %q", n)
	}
	if n := m.ProcessorName(task.TypeBit); n != "BIT" {
		t.Errorf("ProcessorName(BIT) = %q", n)
	}
	if ts := m.Types(); len(ts) != 2 || ts[0] != task.TypeBit || ts[1] != task.TypeNoop {
		t.Errorf("Types = %v", ts)
	}
}

func TestMuxUnknownTypeIsPermanent(t *testing.T) {
	m := processors.NewMux()
	err := m.Handle(context.Background(), task.New(task.TypeDup, nil))
	if !processors.IsPermanent(err) || !errors.Is(err, processors.ErrNoHandler) {
		t.Fatalf("err = %v, want permanent ErrNoHandler", err)
	}
	if r := processors.Result(context.Background(), err); r != processors.ResultPermanent {
		t.Fatalf("Result = %q", r)
	}
}

func TestMuxDuplicateRegistrationPanics(t *testing.T) {
	m := processors.NewMux()
	m.Register(task.TypeNoop, noop.New(noop.Config{}))
	defer func() {
		if recover() == nil {
			t.Fatal("second registration did not panic")
		}
	}()
	m.Register(task.TypeNoop, noop.New(noop.Config{}))
}
