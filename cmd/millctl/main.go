// Command millctl is Mill's operator and developer CLI: setting up queues,
// buckets, tables and the database, migrations, policies, stores, content, and
// more. Run `millctl help` for the list of commands, `millctl GROUP` (e.g.
// `millctl dlq`) for a group's commands and `millctl CMD --help` for one
// command's flags; every flag can also be set by its MILL_* environment
// variable. `millctl completion bash|zsh|fish|powershell` prints a shell
// completion script.
//
// Each command lives in its own file and registers itself (register) with
// its flags defined on a standard library flag.FlagSet; cli.go turns the
// registry into a command tree for the CLI library (cobra), which parses
// the command line, and binds every flag to its MILL_* variable.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

// command is one millctl subcommand. Each lives in its own file and adds
// itself to the registry with register in an init function.
type command struct {
	// name is "setup", or "dlq list" for a command of a group; the group
	// ("dlq") exists as soon as one of its commands is registered.
	name    string
	summary string // one line for `millctl help`
	// usage is the text shown above the flags by --help.
	usage string
	// flags defines the command's flags on fs; it returns the function that
	// runs the command once they are parsed. args are the positional
	// arguments left after the flags.
	flags func(fs *flag.FlagSet, app *app) func(ctx context.Context, args []string) error
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("millctl: command registered twice: " + c.name)
	}
	commands[c.name] = c
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
