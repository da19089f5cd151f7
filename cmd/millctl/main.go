// Command millctl is Mill's operator and developer CLI: setting up queues,
// buckets, tables and the database, migrations, policies, stores, content, and
// more. Run `millctl help` for the list of commands and `millctl CMD --help`
// for one command's flags; every flag can also be set by its MILL_*
// environment variable.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/millfleet/mill/internal/envflag"
)

// command is one millctl subcommand. Each lives in its own file and adds
// itself to the registry with register in an init function.
type command struct {
	name    string // "setup", or "dlq list" for a nested command
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

// run executes one command line and returns the process exit code.
func run(ctx context.Context, a *app, args []string) int {
	cmd, rest := lookup(args)
	if cmd == nil {
		if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
			printHelp(a.stdout)
			return 0
		}
		fmt.Fprintf(a.stderr, "millctl: unknown command %q\n\n", strings.Join(args, " "))
		printHelp(a.stderr)
		return 2
	}
	fs := flag.NewFlagSet("millctl "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	runFn := cmd.flags(fs, a)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: millctl %s\n\n", cmd.name)
		envflag.Usage(fs, fs.Output(), cmd.usage)
	}
	if err := envflag.Parse(fs, rest, a.getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(a.stderr, "millctl %s: %v\n", cmd.name, err)
		return 2
	}
	if err := runFn(ctx, fs.Args()); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(a.stderr, "millctl %s: %v\n", cmd.name, err)
			fs.Usage()
			return 2
		}
		fmt.Fprintf(a.stderr, "millctl %s: %v\n", cmd.name, err)
		return 1
	}
	return 0
}

// usageError is a mistake in the command line (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// lookup finds the longest registered command name that prefixes args
// ("dlq list" before "dlq").
func lookup(args []string) (*command, []string) {
	for n := min(len(args), 3); n > 0; n-- {
		if c, ok := commands[strings.Join(args[:n], " ")]; ok {
			return c, args[n:]
		}
	}
	return nil, nil
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "millctl — operate and develop Mill.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "usage: millctl COMMAND [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-22s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `millctl COMMAND --help` for a command's flags. Every flag can also be set")
	fmt.Fprintln(w, "by an environment variable: --queue-prefix is MILL_QUEUE_PREFIX.")
}
