// Package envflag binds command-line flags to MILL_* environment variables so
// every flag of every Mill binary can be set either way. A flag named
// "queue-prefix" is read from MILL_QUEUE_PREFIX when it is not given on the
// command line; the command line wins. Usage texts name the variable.
package envflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Prefix is prepended to every variable name.
const Prefix = "MILL_"

// VarName returns the environment variable for a flag name:
// "queue-prefix" → "MILL_QUEUE_PREFIX".
func VarName(flagName string) string {
	return Prefix + strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(flagName))
}

// Parse parses args into fs, then sets every flag not given on the command
// line from its environment variable (looked up with getenv; nil means
// os.Getenv). A bad value in a variable is an error naming the variable.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	return SetFromEnv(fs, func(name string) bool { return given[name] }, getenv)
}

// SetFromEnv sets every flag of fs for which given is false from its
// environment variable (looked up with getenv; nil means os.Getenv), for
// a command line parsed by another parser (millctl's CLI library) into
// fs's values. A bad value in a variable is an error naming the variable;
// every bad variable is reported.
func SetFromEnv(fs *flag.FlagSet, given func(name string) bool, getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given(f.Name) {
			return
		}
		v := getenv(VarName(f.Name))
		if v == "" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", VarName(f.Name), v, err))
		}
	})
	return errors.Join(errs...)
}

// Usage writes a usage text for fs: the summary, then each flag with its
// default and environment variable.
func Usage(fs *flag.FlagSet, w io.Writer, summary string) {
	if summary != "" {
		fmt.Fprintln(w, strings.TrimRight(summary, "\n"))
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "Flags (each also settable by the environment variable shown):")
	var flags []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	for _, f := range flags {
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintf(w, "%s\n      %s\n      [%s", line, strings.ReplaceAll(usage, "\n", "\n      "), VarName(f.Name))
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" && f.DefValue != "[]" {
			fmt.Fprintf(w, "; default %s", f.DefValue)
		}
		fmt.Fprintln(w, "]")
	}
}

// Names returns the environment variable of every flag in fs, sorted.
func Names(fs *flag.FlagSet) []string {
	var out []string
	fs.VisitAll(func(f *flag.Flag) { out = append(out, VarName(f.Name)) })
	sort.Strings(out)
	return out
}
