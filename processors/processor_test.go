package processors_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
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
		fmt.Errorf("bit-error: copy from store 2: %w", storage.ErrArchived),
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

// An error says of itself whether retrying can help: IsPermanent reads its
// Permanent method, so a package declares its errors permanent (as
// pkg/storage and pkg/stores do) without the processors naming them.
func TestErrorsDeclareThemselvesPermanent(t *testing.T) {
	if err := fmt.Errorf("open: %w", declared(true)); !processors.IsPermanent(err) {
		t.Errorf("IsPermanent(%v) = false; the error says it is permanent", err)
	}
	if err := fmt.Errorf("open: %w", declared(false)); processors.IsPermanent(err) {
		t.Errorf("IsPermanent(%v) = true; the error says it is not", err)
	}
	if err := processors.Permanent(declared(false)); !processors.IsPermanent(err) {
		t.Errorf("IsPermanent(%v) = false; marked Permanent", err)
	}
}

// declared is an error that says whether it is permanent.
type declared bool

func (d declared) Error() string   { return fmt.Sprintf("declared permanent=%t", bool(d)) }
func (d declared) Permanent() bool { return bool(d) }

// A store whose files are not as its provider writes them (a symbolic link
// or a forged sidecar in a filesystem store) is refused by the provider
// (storage.ErrUnsafe) on every retry: the task is dead-lettered at once
// with the provider's reason, in every processor.
func TestUnsafeStoreIsPermanent(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	s, err := fsstore.New(root)
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	_, err = s.Head(context.Background(), "linked", "item")
	if !errors.Is(err, fsstore.ErrUnsafe) {
		t.Fatalf("Head through a symlinked space: %v, want fsstore.ErrUnsafe", err)
	}
	err = fmt.Errorf("dup: head source: %w", err)
	if !processors.IsPermanent(err) {
		t.Errorf("IsPermanent(%v) = false", err)
	}
	if r := processors.Result(context.Background(), err); r != processors.ResultPermanent {
		t.Errorf("Result(%v) = %s", err, r)
	}
	if !errors.Is(err, storage.ErrUnsafe) {
		t.Errorf("%v does not wrap the portable storage.ErrUnsafe", err)
	}
}
