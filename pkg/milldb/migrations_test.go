package milldb

import (
	"strings"
	"testing"
	"testing/fstest"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

func TestEmbeddedMigrationsParse(t *testing.T) {
	migs, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"001_content_index", "002_bit_log", "003_bit_report", "004_content_index_missing", "005_bit_log_by_month", "006_space_stats", "007_bit_run_space", "008_bit_verdict", "009_bit_at_rest", "010_content_index_search", "011_bit_log_checked", "012_runs", "013_bit_log_agent", "014_run_requests"}
	if len(migs) != len(want) {
		t.Fatalf("got %d migrations, want %d", len(migs), len(want))
	}
	for i, m := range migs {
		if m.ID() != want[i] || m.Version != i+1 {
			t.Errorf("migration %d = %s (version %d), want %s", i, m.ID(), m.Version, want[i])
		}
		if strings.TrimSpace(m.Up) == "" || strings.TrimSpace(m.Down) == "" {
			t.Errorf("%s: empty up or down", m.ID())
		}
	}
}

func TestParseMigrations(t *testing.T) {
	good := func() fstest.MapFS {
		return fstest.MapFS{
			"001_one.up.sql":        file("create table a (x int);"),
			"001_one.down.sql":      file("drop table a;"),
			"002_two_more.up.sql":   file("create table b (x int);"),
			"002_two_more.down.sql": file("drop table b;"),
		}
	}
	t.Run("good", func(t *testing.T) {
		migs, err := ParseMigrations(good())
		if err != nil {
			t.Fatal(err)
		}
		if len(migs) != 2 || migs[0].ID() != "001_one" || migs[1].ID() != "002_two_more" {
			t.Fatalf("got %+v", migs)
		}
		if migs[1].Up != "create table b (x int);" || migs[1].Down != "drop table b;" {
			t.Fatalf("bodies mixed up: %+v", migs[1])
		}
	})
	tests := []struct {
		name   string
		change func(fstest.MapFS)
		want   []string // every substring must appear in the error
	}{
		{"two-digit version", func(f fstest.MapFS) { f["03_three.up.sql"] = file("x") }, []string{"03_three.up.sql: not a migration file name"}},
		{"upper case name", func(f fstest.MapFS) { f["003_Three.up.sql"] = file("x") }, []string{"003_Three.up.sql: not a migration file name"}},
		{"wrong direction", func(f fstest.MapFS) { f["003_three.sideways.sql"] = file("x") }, []string{"not a migration file name"}},
		{"stray file", func(f fstest.MapFS) { f["README.md"] = file("x") }, []string{"README.md: not a migration file name"}},
		{"no extension", func(f fstest.MapFS) { f["003_three.up"] = file("x") }, []string{"003_three.up: not a migration file name"}},
		{"subdirectory", func(f fstest.MapFS) { f["old/001_x.up.sql"] = file("x") }, []string{"old: not a migration file name"}},
		{"missing down", func(f fstest.MapFS) { f["003_three.up.sql"] = file("x") }, []string{"003_three.down.sql is missing"}},
		{"missing up", func(f fstest.MapFS) { f["003_three.down.sql"] = file("x") }, []string{"003_three.up.sql is missing"}},
		{"duplicate version", func(f fstest.MapFS) {
			f["002_other.up.sql"] = file("x")
			f["002_other.down.sql"] = file("x")
		}, []string{"version 002 is also used by"}},
		{"gap", func(f fstest.MapFS) {
			f["004_four.up.sql"] = file("x")
			f["004_four.down.sql"] = file("x")
		}, []string{"004_four: version gap: 003 is missing"}},
		{"version zero", func(f fstest.MapFS) {
			f["000_zero.up.sql"] = file("x")
			f["000_zero.down.sql"] = file("x")
		}, []string{"version 000 is not allowed"}},
		{"empty file", func(f fstest.MapFS) { f["002_two_more.down.sql"] = file(" \n\t") }, []string{"002_two_more.down.sql: empty migration"}},
		{"every problem at once", func(f fstest.MapFS) {
			f["README.md"] = file("x")
			f["003_three.up.sql"] = file("x")
			f["005_five.up.sql"] = file("x")
			f["005_five.down.sql"] = file("x")
		}, []string{"README.md", "003_three.down.sql is missing", "005_five: version gap: 004 is missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := good()
			tt.change(f)
			migs, err := ParseMigrations(f)
			if err == nil {
				t.Fatalf("no error; parsed %d migrations", len(migs))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func FuzzMigrationFileName(f *testing.F) {
	for _, s := range []string{"001_a.up.sql", "999_b_c.down.sql", "01_a.up.sql", "001_.up.sql", "001_a__b.up.sql"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if strings.ContainsAny(name, "/\x00") || name == "" || name == "." || name == ".." {
			return
		}
		fsys := fstest.MapFS{name: file("select 1;")}
		migs, err := ParseMigrations(fsys)
		// A single file can never be a complete migration set: it lacks its
		// pair, or it is not a migration at all.
		if err == nil {
			t.Fatalf("%q parsed without error: %+v", name, migs)
		}
	})
}
