package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/millfleet/mill/internal/cli/envflag"
	"github.com/millfleet/mill/internal/wiring"
)

// run executes one command line and returns the process exit code: 0 on
// success or help, 1 when the command failed, 2 for a usage error (an
// unknown command or flag, a bad value, missing or unexpected arguments).
func run(ctx context.Context, a *app, args []string) int {
	root := newTree(a).root
	root.SetArgs(args)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetIn(a.stdin)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	path := cmd.CommandPath()
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(a.stderr, "%s: %v\n", path, err)
		if cmd.HasAvailableSubCommands() && !commandRunnable(cmd) {
			cmd.SetOut(a.stderr)
			cmd.HelpFunc()(cmd, nil)
		} else {
			fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", path)
		}
		return 2
	}
	fmt.Fprintf(a.stderr, "%s: %v\n", path, wiring.Explain(err))
	return 1
}

// commandRunnable reports whether cmd is a command of the tree (not a
// group nor one of cobra's own).
func commandRunnable(cmd *cobra.Command) bool {
	_, ok := commands[commandName(cmd)]
	return ok
}

// commandName is cmd's name in the tree: its path without "millctl ".
func commandName(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// tree is millctl's command tree for one command line.
type tree struct {
	root *cobra.Command
	// flags is the standard library FlagSet of each command of the tree,
	// for its --help (envflag.Usage names each flag's variable).
	flags map[*cobra.Command]*flag.FlagSet
}

// newTree builds the cobra command tree from commandTree: one cobra
// command per command, with the flags it defines on a standard library
// FlagSet handed to cobra's parser, and a group command for every
// name prefix ("dlq" of "dlq list") that is not itself a command.
func newTree(a *app) *tree {
	t := &tree{flags: map[*cobra.Command]*flag.FlagSet{}}
	root := &cobra.Command{
		Use:           "millctl",
		Short:         "operate and develop Mill",
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          groupArgs,
		RunE:          func(*cobra.Command, []string) error { return nil },
	}
	t.root = root
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err.Error()} })
	root.SetHelpFunc(func(cmd *cobra.Command, _ []string) { t.printHelp(cmd.OutOrStdout(), cmd) })
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [COMMAND]",
		Short: "help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			target, _, err := c.Root().Find(args)
			if err != nil || target == nil || (len(args) > 0 && target == c.Root()) {
				return usagef("unknown command %q", strings.Join(args, " "))
			}
			t.printHelp(c.OutOrStdout(), target)
			return nil
		},
	})

	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names) // parents before children
	nodes := map[string]*cobra.Command{"": root}
	var node func(path string) *cobra.Command
	node = func(path string) *cobra.Command {
		if c, ok := nodes[path]; ok {
			return c
		}
		parentPath, name := "", path
		if i := strings.LastIndex(path, " "); i >= 0 {
			parentPath, name = path[:i], path[i+1:]
		}
		var c *cobra.Command
		if reg, ok := commands[path]; ok {
			c = t.leaf(a, name, reg)
		} else {
			c = &cobra.Command{Use: name, Args: groupArgs, RunE: func(*cobra.Command, []string) error { return nil }}
		}
		node(parentPath).AddCommand(c)
		nodes[path] = c
		return c
	}
	for _, n := range names {
		node(n)
	}
	return t
}

// leaf is the cobra command of a command of the tree.
func (t *tree) leaf(a *app, name string, reg *command) *cobra.Command {
	fs := flag.NewFlagSet("millctl "+reg.name, flag.ContinueOnError)
	runFn := reg.flags(fs, a)
	c := &cobra.Command{
		Use:   name,
		Short: reg.summary,
		// Positional arguments are the command's to check (usagef).
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := envflag.SetFromEnv(fs, cmd.Flags().Changed, a.getenv); err != nil {
				return usageError{err.Error()}
			}
			return runFn(cmd.Context(), args)
		},
	}
	c.Flags().AddGoFlagSet(fs)
	c.Annotations = map[string]string{"usage": reg.usage}
	t.flags[c] = fs
	return c
}

// groupArgs is the argument check of a group (and of millctl itself): a
// group is not a command, so naming none of its commands, or one it does
// not have, is a usage error that lists them.
func groupArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return usageError{"missing command"}
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	cmd.SuggestionsMinimumDistance = 2
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return usageError{msg}
}

// printHelp writes cmd's help: for a command of the tree its usage and
// flags (each with its MILL_* variable), for a group or millctl itself
// the commands under it.
func (t *tree) printHelp(w io.Writer, cmd *cobra.Command) {
	if fs, ok := t.flags[cmd]; ok {
		fmt.Fprintf(w, "usage: %s [flags] [args]\n\n", cmd.CommandPath())
		envflag.Usage(fs, w, cmd.Annotations["usage"])
		if sub := t.leaves(cmd); len(sub) > 0 {
			fmt.Fprintln(w)
			fmt.Fprintln(w, "Subcommands:")
			listCommands(w, sub)
		}
		return
	}
	if cmd != t.root && len(t.leaves(cmd)) == 0 {
		// One of cobra's own (the completion scripts).
		if cmd.Long != "" {
			fmt.Fprintln(w, strings.TrimSpace(cmd.Long))
			fmt.Fprintln(w)
		}
		cmd.SetOut(w)
		_ = cmd.Usage()
		return
	}
	if cmd == cmd.Root() {
		fmt.Fprintln(w, "millctl — operate and develop Mill.")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "usage: millctl COMMAND [flags] [args]")
	} else {
		fmt.Fprintf(w, "%s — %s.\n\n", cmd.CommandPath(), groupSummary(cmd))
		fmt.Fprintf(w, "usage: %s COMMAND [flags] [args]\n", cmd.CommandPath())
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	listCommands(w, t.leaves(cmd))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `millctl COMMAND --help` for a command's flags, `millctl GROUP` (e.g.")
	fmt.Fprintln(w, "millctl dlq) for a group's commands. Every flag can also be set by an")
	fmt.Fprintln(w, "environment variable: --queue-prefix is MILL_QUEUE_PREFIX.")
	if cmd == cmd.Root() {
		fmt.Fprintln(w, "Shell completion: source <(millctl completion bash); also zsh, fish and")
		fmt.Fprintln(w, "powershell (millctl completion --help).")
	}
}

// leaves returns the commands of the tree under cmd, in name order.
func (t *tree) leaves(cmd *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, c := range cmd.Commands() {
		if _, ok := t.flags[c]; ok {
			out = append(out, c)
		}
		out = append(out, t.leaves(c)...)
	}
	sort.Slice(out, func(i, j int) bool { return commandName(out[i]) < commandName(out[j]) })
	return out
}

func listCommands(w io.Writer, cmds []*cobra.Command) {
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-22s %s\n", commandName(c), c.Short)
	}
}

func groupSummary(cmd *cobra.Command) string {
	if s, ok := groupSummaries[commandName(cmd)]; ok {
		return s
	}
	var names []string
	for _, c := range cmd.Commands() {
		names = append(names, c.Name())
	}
	return strings.Join(names, ", ")
}
