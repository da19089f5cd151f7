package objstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
)

func TestMapErrWrapAndPortable(t *testing.T) {
	other := errors.New("service said no")
	mapErr := MapErr(func(err error) error {
		if err.Error() == "unknown" {
			return nil
		}
		return storage.ErrNotFound
	}, storage.ErrChanged)
	if mapErr(nil) != nil {
		t.Error("mapErr of nil is not nil")
	}
	if unknown := errors.New("unknown"); mapErr(unknown) != unknown {
		t.Error("mapErr changed an error its kind does not name")
	}
	wrap := Wrap("teststore", mapErr)
	if wrap("get", "s/x", nil) != nil {
		t.Error("wrap of nil is not nil")
	}
	err := wrap("get", "s/x", other)
	if !errors.Is(err, storage.ErrNotFound) || !errors.Is(err, other) || err.Error() != `teststore: get "s/x": `+storage.ErrNotFound.Error()+": service said no" {
		t.Errorf("wrap: %v", err)
	}
	for _, e := range []error{storage.ErrChanged, context.Canceled, fmt.Errorf("x: %w", storage.ErrInvalidID)} {
		if err := wrap("put", "k", e); errors.Is(err, storage.ErrNotFound) {
			t.Errorf("wrap(%v) mapped a portable error: %v", e, err)
		}
	}
	if Portable(other) || Portable(storage.ErrChanged) {
		t.Error("Portable of a service error, or of an error it was not given")
	}
}
