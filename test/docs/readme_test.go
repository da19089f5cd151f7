package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeNames fails when README.md names a make target, a binary, a
// millctl command, a flag or a repository path that does not exist: the
// targets are the Makefile's, the binaries those `go build ./cmd/...`
// makes, the commands and flags what each binary's --help (and each
// millctl command's) prints, and the paths are looked up on disk.
func TestReadmeNames(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every binary")
	}
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	targets, err := makeTargets(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	n := names{helpSet: helps(t), targets: targets, root: root}
	problems, checked := n.check(string(readme))
	for _, p := range problems {
		t.Errorf("README.md: %s", p)
	}
	// The README names dozens of each; a parser that finds none is broken.
	for _, kind := range []string{"make", "binary", "millctl", "flag", "path", "link"} {
		if checked[kind] < 3 {
			t.Errorf("checked only %d %s names in README.md: is the parser still finding them?", checked[kind], kind)
		}
	}
	t.Logf("checked: %v", checked)
}

// TestReadmeNamesRefuses shows that each kind of name the README could get
// wrong is reported, against a made-up set of binaries and targets.
func TestReadmeNamesRefuses(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "docs", "RUNBOOK.md"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n := names{
		helpSet: &helpSet{
			bins:    map[string]bool{"workman": true, "millctl": true},
			millctl: []string{"dlq list", "dlq show", "setup"},
			flags: map[string]map[string]bool{
				"workman":          {"--workers": true},
				"millctl dlq list": {"--limit": true},
				"millctl setup":    {"--dry-run": true},
			},
		},
		targets: map[string]bool{"test": true, "up": true, "env": true},
		root:    root,
	}
	good := "# T\n\n## Good part\n\n`make test`, `millctl dlq list|show`, `workman --workers 4`,\n" +
		"`--dry-run`, `millctl dlq`, `millctl help`, [runbook](docs/RUNBOOK.md), `docs/RUNBOOK.md`,\n" +
		"[up](#good-part), `claims/`\n\n```sh\nmake up && eval \"$(make -s env)\"\nbin/millctl setup --dry-run   # plan\n```\n"
	if problems, _ := n.check(good); len(problems) > 0 {
		t.Errorf("a README naming only what exists: %q", problems)
	}
	bad := map[string]string{
		"`make nosuch`":                    `make target "nosuch"`,
		"`millctl frobnicate`":             `millctl command "frobnicate"`,
		"`millctl dlq list|burn`":          `millctl command "dlq burn"`,
		"```sh\nbin/nosuchbin --x\n```":    `binary "nosuchbin"`,
		"`workman --no-such-flag`":         `flag --no-such-flag of workman`,
		"`millctl setup --limit 3`":        `flag --limit of millctl setup`,
		"`--nowhere`":                      `flag --nowhere`,
		"`docs/NOPE.md`":                   `path docs/NOPE.md`,
		"[x](docs/MISSING.md)":             `link docs/MISSING.md`,
		"[y](#no-such-heading)":            `link #no-such-heading`,
		"```sh\nmake up; make broken\n```": `make target "broken"`,
	}
	for text, want := range bad {
		problems, _ := n.check(good + "\n" + text + "\n")
		if len(problems) != 1 || !strings.Contains(problems[0], want) {
			t.Errorf("%q: problems %q, want one naming %s", text, problems, want)
		}
	}
}

// names checks the names a Markdown text uses.
type names struct {
	*helpSet
	targets map[string]bool
	root    string
}

var (
	fence    = regexp.MustCompile("(?ms)^```([a-z]*)\n(.*?)^```")
	span     = regexp.MustCompile("`([^`]+)`")
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)|(?:src|href)="([^"]+)"`)
	heading  = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	flagTok  = regexp.MustCompile(`^--[a-z0-9][a-z0-9-]*`)
	pathLike = regexp.MustCompile(`^\.?/?[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]*)+$`)
	// a placeholder or an argument, not a command word: GROUP, ID, acme…
	placeholder = regexp.MustCompile(`^[A-Z][A-Z_]*$`)
)

// check returns one line per name that does not exist, and how many names
// of each kind it checked.
func (n names) check(text string) (problems []string, checked map[string]int) {
	checked = map[string]int{}
	report := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	// Fenced blocks: shell lines (sh, or "$ " lines of a plain block).
	for _, m := range fence.FindAllStringSubmatch(text, -1) {
		lang, body := m[1], m[2]
		if lang != "sh" && lang != "" {
			continue
		}
		for _, line := range strings.Split(body, "\n") {
			if lang == "" {
				var ok bool
				if line, ok = strings.CutPrefix(line, "$ "); !ok {
					continue
				}
			}
			for _, cmd := range shellCommands(line) {
				n.command(cmd, checked, report)
			}
		}
	}
	prose := fence.ReplaceAllString(text, "")
	joined := strings.ReplaceAll(prose, "\n", " ")
	for _, m := range span.FindAllStringSubmatch(joined, -1) {
		s := strings.TrimSpace(m[1])
		f := strings.Fields(s)
		switch {
		case len(f) == 0:
		case strings.HasPrefix(s, "--"):
			n.flag("", flagTok.FindString(f[0]), checked, report)
		case f[0] == "make" || f[0] == "millctl" || n.bins[f[0]] || strings.HasPrefix(f[0], "bin/") || f[0] == "go":
			n.command(f, checked, report)
		case len(f) == 1 && pathLike.MatchString(s):
			n.path(s, "path", checked, report)
		}
	}
	// Links and images: files of the repository, or a heading of this text.
	anchors := map[string]bool{}
	for _, h := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		anchors[slug(h[1])] = true
	}
	for _, m := range mdLink.FindAllStringSubmatch(prose, -1) {
		target := m[1] + m[2]
		switch {
		case strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:"):
		case strings.HasPrefix(target, "#"):
			checked["link"]++
			if !anchors[target[1:]] {
				report("link %s: no such heading", target)
			}
		default:
			file, _, _ := strings.Cut(target, "#")
			checked["link"]++
			if _, err := os.Stat(filepath.Join(n.root, filepath.FromSlash(file))); err != nil {
				report("link %s: %v", target, err)
			}
		}
	}
	return problems, checked
}

// command checks one command line, split into words.
func (n names) command(f []string, checked map[string]int, report func(string, ...any)) {
	if len(f) == 0 {
		return
	}
	name := f[0]
	switch {
	case name == "make":
		for _, w := range f[1:] {
			if strings.HasPrefix(w, "-") || strings.Contains(w, "=") {
				continue
			}
			checked["make"]++
			if !n.targets[w] {
				report("make target %q: not in the Makefile", w)
			}
		}
		return
	case name == "go":
		for _, w := range f[1:] {
			if strings.HasPrefix(w, "./") {
				n.path(w, "path", checked, report)
			}
		}
		return
	case strings.HasPrefix(name, "bin/"):
		name = strings.TrimPrefix(name, "bin/")
	case name != "millctl" && !n.bins[name]:
		return // another program (eval, kill, aws…)
	}
	checked["binary"]++
	if !n.bins[name] {
		report("binary %q: no cmd/%s", name, name)
		return
	}
	cmds := []string{name}
	rest := f[1:]
	if name == "millctl" {
		cmds, rest = n.millctlCommand(f[1:], checked, report)
	}
	for _, w := range rest {
		if fl := flagTok.FindString(w); fl != "" {
			for _, c := range cmds {
				n.flag(c, fl, checked, report)
			}
		}
	}
}

// millctlCommand resolves the words after millctl to its commands
// ("policy get|put" names two) and returns them ("millctl policy get"),
// with the words that follow.
func (n names) millctlCommand(words []string, checked map[string]int, report func(string, ...any)) (cmds, rest []string) {
	var head []string
	for len(words) > 0 && !strings.HasPrefix(words[0], "-") {
		head, words = append(head, words[0]), words[1:]
	}
	known := map[string]bool{}
	groups := map[string]bool{"help": true, "completion": true}
	for _, c := range n.millctl {
		known[c] = true
		groups[strings.Fields(c)[0]] = true
	}
	if len(head) == 0 || placeholder.MatchString(head[0]) {
		return nil, words // millctl alone, or millctl GROUP
	}
	for _, alt := range expand(head) {
		checked["millctl"]++
		best := 0
		for i := 1; i <= len(alt); i++ {
			if known[strings.Join(alt[:i], " ")] {
				best = i
			}
		}
		switch {
		case best > 0:
			cmds = append(cmds, "millctl "+strings.Join(alt[:best], " "))
		case len(alt) == 1 && groups[alt[0]]:
			// a group (millctl dlq) or a built-in (help, completion)
		case groups[alt[0]] && len(alt) > 1 && !known[alt[0]+" "+alt[1]]:
			report("millctl command %q: not in `millctl help`", strings.Join(alt[:2], " "))
		default:
			report("millctl command %q: not in `millctl help`", alt[0])
		}
	}
	return cmds, words
}

// expand turns words with alternatives ("list|show") into every
// combination.
func expand(words []string) [][]string {
	out := [][]string{nil}
	for _, w := range words {
		var next [][]string
		for _, alt := range strings.Split(w, "|") {
			for _, o := range out {
				next = append(next, append(append([]string(nil), o...), alt))
			}
		}
		out = next
	}
	return out
}

// flag checks that a flag belongs to cmd ("workman", "millctl dlq list"),
// or, without a command, to any binary or command.
func (n names) flag(cmd, fl string, checked map[string]int, report func(string, ...any)) {
	if fl == "" || fl == "--help" {
		return
	}
	checked["flag"]++
	if cmd != "" {
		if !n.flags[cmd][fl] {
			report("flag %s of %s: not in its --help", fl, cmd)
		}
		return
	}
	for _, set := range n.flags {
		if set[fl] {
			return
		}
	}
	report("flag %s: no binary or command has it", fl)
}

// path checks a repository path whose first element is in the repository
// (a name like claims/ or .local/ is a bucket prefix or a build output, not
// a file of the repository).
func (n names) path(p, kind string, checked map[string]int, report func(string, ...any)) {
	clean := strings.TrimPrefix(p, "./")
	first, _, _ := strings.Cut(clean, "/")
	if first == "" || strings.HasPrefix(first, ".") || first == "bin" {
		return
	}
	if _, err := os.Stat(filepath.Join(n.root, first)); err != nil && !strings.HasPrefix(p, "./") {
		return
	}
	checked[kind]++
	if _, err := os.Stat(filepath.Join(n.root, filepath.FromSlash(clean))); err != nil {
		report("path %s: %v", p, err)
	}
}

// shellCommands splits one shell line into its commands' words: comments
// dropped, split at && || ; | and $( … ), quotes and redirections removed.
func shellCommands(line string) [][]string {
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	if strings.HasPrefix(strings.TrimSpace(line), "#") {
		return nil
	}
	for _, sep := range []string{"&&", "||", ";", "$(", ")", "\"", "'"} {
		line = strings.ReplaceAll(line, sep, "\n")
	}
	var out [][]string
	for _, part := range strings.Split(line, "\n") {
		var words []string
		for _, w := range strings.Fields(part) {
			if w == "&" || strings.ContainsAny(w[:1], "<>0123456789") && strings.ContainsAny(w, "<>") {
				continue
			}
			words = append(words, w)
		}
		if len(words) > 0 {
			out = append(out, words)
		}
	}
	return out
}

// slug is GitHub's anchor of a heading: lower case, punctuation dropped,
// spaces to hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// makeTargets reads the Makefile's targets.
func makeTargets(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	re := regexp.MustCompile(`(?m)^([A-Za-z0-9_/-][A-Za-z0-9_./-]*):([^=]|$)`)
	t := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		t[m[1]] = true
	}
	if len(t) == 0 {
		return nil, fmt.Errorf("%s: no targets", path)
	}
	return t, nil
}

// TestDocSizes keeps the README a user's guide and ARCHITECTURE.md a design
// reference: mechanisms belong in the packages' doc comments, figures in
// docs/PERFORMANCE.md.
func TestDocSizes(t *testing.T) {
	for file, most := range map[string]int{"README.md": 400, "docs/ARCHITECTURE.md": 800} {
		b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(file)))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); n > most {
			t.Errorf("%s has %d lines, more than %d: say each fact once, in its one place", file, n, most)
		}
	}
}
