// Command millctl is Mill's operator and developer CLI: setting up queues,
// buckets, tables and the database, migrations, policies, stores, content, and
// more. Run `millctl help` for the list of commands, `millctl GROUP` (e.g.
// `millctl dlq`) for a group's commands and `millctl CMD --help` for one
// command's flags; every flag can also be set by its MILL_* environment
// variable. `millctl completion bash|zsh|fish|powershell` prints a shell
// completion script.
//
// tree.go lists every group and command (commandTree). A command's options
// are a typed struct (options) whose define method binds its fields to
// flags on a standard library flag.FlagSet (after those of the flag group
// it embeds, if any) and whose run method is the command's body; its usage
// text is a constant next to it. cli.go turns the tree into a command tree
// for the CLI library (cobra), which parses the command line, and binds
// every flag to its MILL_* variable. The helpers the commands share live in
// helpers.go (flags, prompts, files, output) and configsource.go (the
// config source).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"reflect"
	"syscall"
)

// command is one millctl command of the tree (commandTree).
type command struct {
	// name is "setup", or "dlq list" for a command of a group.
	name    string
	summary string // one line for `millctl help`
	// usage is the text shown above the flags by --help.
	usage string
	// flags defines the command's flags on fs; it returns the function that
	// runs the command once they are parsed. args are the positional
	// arguments left after the flags. bind makes it from typed options.
	flags func(fs *flag.FlagSet, app *app) func(ctx context.Context, args []string) error
}

// options are a command's typed options: run is the command's body,
// called once the command line and the MILL_* variables are parsed into
// the fields. Their flags are those of the flagGroup they embed, if any,
// and their own (definer).
type options interface {
	run(ctx context.Context, a *app, args []string) error
}

// definer is options with flags of their own: define binds the fields to
// flags (defaults, help texts).
type definer interface {
	define(fs *flag.FlagSet, a *app)
}

// flagGroup is the environment a command works in, most shared by several
// (the config source, the content stores, the dead-letter queue, an evidence
// log, Mill's records, a listing of the database): the flags that name it
// and what opens it. Options embed it, and bind defines its flags before the
// command's own; no define calls a defineGroup. Options embed at most one
// (two would hide each other's defineGroup; bind panics): a group that needs
// another embeds it or holds it in a field and defines it in its own
// defineGroup (contentWriter builds on contentEnv, bitlogFilter on dbScope,
// evidenceCrossFlags on evidenceLogFlags and evidenceSourceFlags). Helpers
// that define a flag or two and return what they bind (configFlags,
// databaseURLVar, the wiring package's), or part of one command's own flags
// (console's consoleItemOptions), are not groups: a define calls them.
type flagGroup interface {
	defineGroup(fs *flag.FlagSet, a *app)
}

// flagGroupType is flagGroup's reflect.Type.
var flagGroupType = reflect.TypeFor[flagGroup]()

// bind is command.flags for the options type T: a new T per command line.
func bind[T any, P interface {
	*T
	options
}](fs *flag.FlagSet, a *app) func(context.Context, []string) error {
	t := reflect.TypeFor[T]()
	groups := 0
	for f := range t.Fields() {
		if f.Anonymous && reflect.PointerTo(f.Type).Implements(flagGroupType) {
			groups++
		}
	}
	if groups > 1 {
		panic("millctl: " + t.Name() + " embeds more than one flag group")
	}
	o := P(new(T))
	if g, ok := any(o).(flagGroup); ok {
		g.defineGroup(fs, a)
	}
	if d, ok := any(o).(definer); ok {
		d.define(fs, a)
	}
	return func(ctx context.Context, args []string) error { return o.run(ctx, a, args) }
}

// app is what every command shares: output streams, the logger and the
// environment.
type app struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	logger         *slog.Logger
	getenv         func(string) string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a := &app{stdout: os.Stdout, stderr: os.Stderr, stdin: os.Stdin, getenv: os.Getenv}
	a.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	code := run(ctx, a, os.Args[1:])
	stop()
	os.Exit(code)
}

// usageError is a mistake in the command line (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }
