package milldb

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations
var migrationFS embed.FS

// migrationDir is the directory inside migrationFS holding the files.
const migrationDir = "migrations"

// Migration is one schema change: its Up SQL and the Down SQL that undoes it.
type Migration struct {
	Version int    // 1, 2, 3 … (the NNN of the file name)
	Name    string // "content_index"
	Up      string
	Down    string
}

// ID is "NNN_name", as in the file names.
func (m Migration) ID() string { return fmt.Sprintf("%03d_%s", m.Version, m.Name) }

// migrationFile matches NNN_name.up.sql / NNN_name.down.sql: a three-digit
// version, a lower-case snake_case name.
var migrationFile = regexp.MustCompile(`^([0-9]{3})_([a-z0-9]+(?:_[a-z0-9]+)*)\.(up|down)\.sql$`)

// Migrations returns the migrations compiled into this binary, ordered by
// version. It fails if any file is badly named (see ParseMigrations).
func Migrations() ([]Migration, error) {
	sub, err := fs.Sub(migrationFS, migrationDir)
	if err != nil {
		return nil, fmt.Errorf("milldb: migrations: %w", err)
	}
	return ParseMigrations(sub)
}

// ParseMigrations reads the migrations in the root of fsys. Every problem is
// reported at once: a file or directory whose name is not
// NNN_name.up.sql / NNN_name.down.sql, an up without its down (or the
// reverse), two names for one version, a version 000, a gap in the numbering
// (versions must be 1, 2, 3 … with none missing), or an empty file.
func ParseMigrations(fsys fs.FS) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("milldb: read migrations: %w", err)
	}
	var errs []error
	byVersion := map[int]*Migration{}
	type seen struct{ up, down bool }
	present := map[int]*seen{}
	for _, e := range entries {
		name := e.Name()
		m := migrationFile.FindStringSubmatch(name)
		if e.IsDir() || m == nil {
			errs = append(errs, fmt.Errorf("%s: not a migration file name (want NNN_name.up.sql or NNN_name.down.sql, name in lower-case snake_case)", name))
			continue
		}
		version, _ := strconv.Atoi(m[1])
		if version == 0 {
			errs = append(errs, fmt.Errorf("%s: version 000 is not allowed; migrations start at 001", name))
			continue
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if strings.TrimSpace(string(body)) == "" {
			errs = append(errs, fmt.Errorf("%s: empty migration", name))
		}
		mig := byVersion[version]
		if mig == nil {
			mig = &Migration{Version: version, Name: m[2]}
			byVersion[version] = mig
		} else if mig.Name != m[2] {
			errs = append(errs, fmt.Errorf("%s: version %03d is also used by %q", name, version, mig.Name))
			continue
		}
		if present[version] == nil {
			present[version] = &seen{}
		}
		if m[3] == "up" {
			mig.Up, present[version].up = string(body), true
		} else {
			mig.Down, present[version].down = string(body), true
		}
	}
	versions := make([]int, 0, len(byVersion))
	for v := range byVersion {
		versions = append(versions, v)
	}
	sort.Ints(versions)
	out := make([]Migration, 0, len(versions))
	gap := false
	for i, v := range versions {
		mig := byVersion[v]
		for _, half := range []struct {
			dir string
			ok  bool
		}{{"up", present[v].up}, {"down", present[v].down}} {
			if !half.ok {
				errs = append(errs, fmt.Errorf("%s.%s.sql is missing: every migration needs an up and a down file", mig.ID(), half.dir))
			}
		}
		if v != i+1 && !gap {
			gap = true
			errs = append(errs, fmt.Errorf("%s: version gap: %03d is missing", mig.ID(), i+1))
		}
		out = append(out, *mig)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("milldb: bad migrations:\n%w", err)
	}
	return out, nil
}
