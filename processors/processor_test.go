package processors_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/processors"
)

// A task that names an account or store the registry does not know, or an
// ID no store accepts, fails the same way on every retry: whichever
// processor resolves it, the error is permanent (dead-lettered at once).
func TestUnresolvableNamesArePermanent(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("bitreport: %w", fmt.Errorf("%w %q", stores.ErrUnknownAccount, "ghost")),
		fmt.Errorf("open store: %w", fmt.Errorf("%w %q of account %q", stores.ErrUnknownStore, "9", "acme")),
		fmt.Errorf("list: %w", fmt.Errorf("%w: space ID %q contains a path separator", storage.ErrInvalidID, "a/b")),
	} {
		if !processors.IsPermanent(err) {
			t.Errorf("IsPermanent(%v) = false", err)
		}
		if r := processors.Result(context.Background(), err); r != processors.ResultPermanent {
			t.Errorf("Result(%v) = %s", err, r)
		}
	}
	for _, err := range []error{errors.New("connection reset"), storage.ErrNotFound, context.DeadlineExceeded} {
		if processors.IsPermanent(err) {
			t.Errorf("IsPermanent(%v) = true", err)
		}
	}
}
