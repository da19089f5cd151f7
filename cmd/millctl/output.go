package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// The printing helpers the commands share.

// printFileErrors prints each problem of a validation error (positioned
// file:line:col errors, possibly joined) on its own line of stderr and
// returns a one-line summary error; other errors pass through unchanged.
func printFileErrors(a *app, err error) error {
	var pe *jsonpos.Error
	if !errors.As(err, &pe) {
		return err
	}
	list := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	}
	for _, e := range list {
		fmt.Fprintln(a.stderr, e)
	}
	if len(list) == 1 {
		return errors.New("1 problem")
	}
	return fmt.Errorf("%d problems", len(list))
}

// registrySummary counts a registry's accounts and stores.
func registrySummary(reg *stores.Registry) string {
	n := 0
	for _, acct := range reg.Accounts {
		n += len(acct.Stores)
	}
	return fmt.Sprintf("%d accounts (%d active), %d stores", len(reg.Accounts), len(reg.ActiveAccounts()), n)
}

// dash is s, or "-" when it is empty (a table cell).
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// watchLoop prints what read returns — as JSON (one value per refresh)
// or as its text — once, or with watch every interval until ctx ends,
// clearing the screen between refreshes on a terminal.
func watchLoop(ctx context.Context, a *app, watch, asJSON bool, interval time.Duration, read func(context.Context) (any, func(io.Writer) error, error)) error {
	clear := watch && !asJSON && isTerminal(a.stdout)
	for {
		v, text, err := read(ctx)
		if err != nil {
			return err
		}
		if clear {
			fmt.Fprint(a.stdout, "\033[H\033[2J")
		}
		if asJSON {
			err = json.NewEncoder(a.stdout).Encode(v)
		} else {
			if watch {
				fmt.Fprintf(a.stdout, "%s — every %v, ^C to stop\n", time.Now().Format(time.DateTime), interval)
			}
			err = text(a.stdout)
		}
		if err != nil || !watch {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}
