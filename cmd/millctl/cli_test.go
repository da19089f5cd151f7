package main

import (
	"bytes"
	"context"
	"log/slog"
	"sort"
	"strings"
	"testing"
)

// cli runs millctl in-process with only the given MILL_* environment and
// nothing else (no AWS, no database): for what the command line does
// before a command touches a service.
func cli(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), logger: slog.New(slog.DiscardHandler),
		getenv: func(k string) string { return env[k] }}
	code = run(context.Background(), a, args)
	return code, out.String(), errb.String()
}

// groups returns every group name ("dlq", "content props") of the
// registry with its commands' names.
func groups() map[string][]string {
	g := map[string][]string{}
	for name := range commands {
		words := strings.Fields(name)
		for i := 1; i < len(words); i++ {
			parent := strings.Join(words[:i], " ")
			g[parent] = append(g[parent], name)
		}
	}
	for _, names := range g {
		sort.Strings(names)
	}
	return g
}

func TestGroupsListTheirCommands(t *testing.T) {
	for group, names := range groups() {
		_, runnable := commands[group]
		t.Run(group, func(t *testing.T) {
			code, out, errOut := cli(t, nil, append(strings.Fields(group), "--help")...)
			if code != 0 || errOut != "" {
				t.Fatalf("millctl %s --help: exit %d, stderr %q", group, code, errOut)
			}
			for _, n := range names {
				if !strings.Contains(out, "  "+n+" ") {
					t.Errorf("millctl %s --help does not list %q:\n%s", group, n, out)
				}
			}
			if runnable {
				return // a command with subcommands (console): it runs alone
			}
			code, out, errOut = cli(t, nil, strings.Fields(group)...)
			if code != 2 || out != "" || !strings.Contains(errOut, "missing command") || !strings.Contains(errOut, "  "+names[0]+" ") {
				t.Fatalf("millctl %s: exit %d, stdout %q, stderr %q; want 2 and the list of commands on stderr", group, code, out, errOut)
			}
			code, _, errOut = cli(t, nil, append(strings.Fields(group), "frobnicate")...)
			if code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) || !strings.Contains(errOut, "  "+names[0]+" ") {
				t.Fatalf("millctl %s frobnicate: exit %d, stderr %q", group, code, errOut)
			}
		})
	}
}

func TestHelpEverywhere(t *testing.T) {
	for name, c := range commands {
		args := append(strings.Fields(name), "--help")
		code, out, errOut := cli(t, nil, args...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "usage: millctl "+name+" ") {
			t.Errorf("millctl %s --help: exit %d, stdout %.60q, stderr %q", name, code, out, errOut)
		}
		if first := strings.SplitN(strings.TrimSpace(c.usage), "\n", 2)[0]; !strings.Contains(out, first) {
			t.Errorf("millctl %s --help lacks its usage text %q", name, first)
		}
		for _, h := range [][]string{{"help", name}, {"-h"}} {
			hargs := strings.Fields(name)
			if h[0] == "help" {
				hargs = append([]string{"help"}, hargs...)
			} else {
				hargs = append(hargs, "-h")
			}
			if code, out2, _ := cli(t, nil, hargs...); code != 0 || out2 != out {
				t.Errorf("millctl %s: exit %d, not the same text as --help", strings.Join(hargs, " "), code)
			}
		}
	}
	code, out, _ := cli(t, nil, "help")
	if code != 0 || !strings.Contains(out, "Commands:") || !strings.Contains(out, "  dlq list ") || !strings.Contains(out, "completion") {
		t.Fatalf("millctl help: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{"--help"}, {"-h"}} {
		if code, out2, _ := cli(t, nil, args...); code != 0 || out2 != out {
			t.Errorf("millctl %s: exit %d, not the text of millctl help", args[0], code)
		}
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "missing command"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"queus"}, `did you mean "queues"`},
		{[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"dev", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"dev", "--items", "many"}, `invalid argument "many" for "--items"`},
		{[]string{"dev", "--items", "2"}, "at least 5"},
		{[]string{"dev", "extra"}, "unexpected arguments"},
		{[]string{"evidence", "keygen", "extra", "two"}, `unexpected arguments: ["extra" "two"]`},
		{[]string{"evidence", "events", "extra"}, `unexpected arguments: ["extra"]`},
		{[]string{"version", "--json"}, "unknown flag: --json"},
		{[]string{"console", "--evidence-log", "/nonexistent"}, "--evidence-log and --evidence-key go together"},
	} {
		code, out, errOut := cli(t, nil, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("millctl %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
}

// TestEnvironmentBinding: every flag is also its MILL_* variable, the
// command line wins, and a bad value names the variable (exit 2).
func TestEnvironmentBinding(t *testing.T) {
	code, _, errOut := cli(t, map[string]string{"MILL_ITEMS": "2"}, "dev")
	if code != 2 || !strings.Contains(errOut, "at least 5") {
		t.Fatalf("MILL_ITEMS=2 millctl dev: exit %d, %q; want the --items check", code, errOut)
	}
	code, _, errOut = cli(t, map[string]string{"MILL_ITEMS": "many"}, "dev")
	if code != 2 || !strings.Contains(errOut, `MILL_ITEMS="many"`) {
		t.Fatalf("MILL_ITEMS=many millctl dev: exit %d, %q", code, errOut)
	}
	code, _, errOut = cli(t, map[string]string{"MILL_ITEMS": "many"}, "dev", "--items", "3")
	if code != 2 || strings.Contains(errOut, "MILL_ITEMS") || !strings.Contains(errOut, "at least 5") {
		t.Fatalf("MILL_ITEMS=many millctl dev --items 3: exit %d, %q; the command line wins", code, errOut)
	}
	// Flags may follow the arguments.
	code, _, errOut = cli(t, nil, "policy", "validate", "no-such-file.json", "--registry", "no-such-registry.json")
	if code != 1 || !strings.Contains(errOut, "no-such-registry.json") {
		t.Fatalf("flags after arguments: exit %d, %q", code, errOut)
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		code, out, errOut := cli(t, nil, "completion", shell)
		if code != 0 || !strings.Contains(out, "millctl") || errOut != "" {
			t.Errorf("millctl completion %s: exit %d, %d bytes, stderr %q", shell, code, len(out), errOut)
		}
	}
	// What the scripts ask: the commands of a group, then a command's flags.
	code, out, _ := cli(t, nil, "__complete", "dlq", "")
	for _, want := range []string{"list", "show", "redrive", "purge"} {
		if code != 0 || !strings.Contains(out, want+"\t") {
			t.Errorf("completion of millctl dlq: exit %d, no %q in\n%s", code, want, out)
		}
	}
	code, out, _ = cli(t, nil, "__complete", "queues", "--queue-")
	if code != 0 || !strings.Contains(out, "--queue-prefix") {
		t.Errorf("completion of millctl queues --queue-: exit %d\n%s", code, out)
	}
	code, out, _ = cli(t, nil, "completion", "--help")
	if code != 0 || !strings.Contains(out, "bash") {
		t.Errorf("millctl completion --help: exit %d\n%s", code, out)
	}
}
