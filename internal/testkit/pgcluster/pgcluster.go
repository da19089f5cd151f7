// Package pgcluster starts a throwaway PostgreSQL cluster for one test: its
// own data directory under t.TempDir(), its own free port on 127.0.0.1,
// trust authentication. A fault test can then stop, restart or crash THAT
// server without disturbing the shared one the other tests use
// (MILL_DATABASE_URL).
//
// The server binaries are the Debian layout's /usr/lib/postgresql/*/bin
// (the newest major found), or the directory named by MILL_PG_BIN. When the
// test runs as root, initdb and pg_ctl run as the postgres system user
// (runuser), as localstack/up.sh does, because the server refuses to run as
// root. Without binaries the test is skipped, or fails under CI=true.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/millfleet/mill/internal/testkit/testenv"
)

// Database is the database Start creates (besides postgres).
const Database = "mill"

// Cluster is one running throwaway server.
type Cluster struct {
	// Port is the server's TCP port on 127.0.0.1.
	Port int
	// Dir holds the data directory ("data"), the socket directory ("run")
	// and the server log ("postgres.log").
	Dir string

	t    testing.TB
	bin  string
	asPG []string // command prefix that runs as the postgres user, or nil

	mu      sync.Mutex
	running bool
}

// Bin returns the directory of the server binaries, or an error saying why
// there is none.
func Bin() (string, error) {
	if d := os.Getenv("MILL_PG_BIN"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err != nil {
			return "", fmt.Errorf("MILL_PG_BIN=%s: %w", d, err)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) < majorOf(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "pg_ctl")); err == nil {
			return dirs[i], nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (install the postgresql package, or set MILL_PG_BIN)")
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Start initialises and starts a cluster for t, with the database "mill";
// it is stopped (immediately) and removed when the test ends. Skipped in
// -short mode.
func Start(t testing.TB) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a PostgreSQL server; skipped in -short mode")
	}
	bin, err := Bin()
	if err != nil {
		testenv.Unavailable(t, "a PostgreSQL installation", err)
	}
	c := &Cluster{t: t, bin: bin, Dir: t.TempDir()}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			testenv.Unavailable(t, "the postgres system user (needed to run the server when root)", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		// t.TempDir and its parent are 0700 root: let the postgres user
		// through (traverse only) to its own directory.
		for d := c.Dir; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()) && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatalf("pgcluster: chmod %s: %v", d, err)
			}
		}
		if err := os.Chown(c.Dir, uid, gid); err != nil {
			t.Fatalf("pgcluster: chown %s: %v", c.Dir, err)
		}
		c.asPG = []string{"runuser", "-u", "postgres", "--"}
	}
	for _, sub := range []string{"run"} {
		if err := c.mkdir(sub); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := c.cmd(ctx, "initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("pgcluster: initdb: %v\n%s", err, out)
	}
	t.Cleanup(c.cleanup)
	// A free port can be taken between our probe and the server's bind:
	// try a few.
	var lastErr error
	for range 3 {
		c.Port, err = freePort()
		if err != nil {
			t.Fatalf("pgcluster: %v", err)
		}
		if lastErr = c.Start(ctx); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("pgcluster: %v", lastErr)
	}
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatalf("pgcluster: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "create database "+Database); err != nil {
		t.Fatalf("pgcluster: create database: %v", err)
	}
	return c
}

func (c *Cluster) data() string { return filepath.Join(c.Dir, "data") }

// Log is the path of the server log.
func (c *Cluster) Log() string { return filepath.Join(c.Dir, "postgres.log") }

func (c *Cluster) mkdir(sub string) error {
	p := filepath.Join(c.Dir, sub)
	if err := os.MkdirAll(p, 0o700); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return c.chownToPG(p)
}

func (c *Cluster) chownToPG(p string) error {
	if c.asPG == nil {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(p, uid, gid); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return nil
}

func (c *Cluster) cmd(ctx context.Context, prog string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, c.asPG...), filepath.Join(c.bin, prog)), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = c.Dir
	return cmd
}

// URL is a database URL for db on this cluster (user postgres, trust).
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, db)
}

func (c *Cluster) serverOptions() string {
	return fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s -c max_connections=50 -c fsync=off -c full_page_writes=off",
		c.Port, filepath.Join(c.Dir, "run"))
}

func (c *Cluster) pgctl(ctx context.Context, args ...string) error {
	if c.asPG != nil {
		// The log file is opened by pg_ctl as the postgres user.
		if f, err := os.OpenFile(c.Log(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			f.Close()
			_ = c.chownToPG(c.Log())
		}
	}
	out, err := c.cmd(ctx, "pg_ctl", append([]string{"-D", c.data(), "-l", c.Log()}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %s: %v\n%s\n%s", strings.Join(args, " "), err, out, c.tailLog())
	}
	return nil
}

// tailLog is the end of the server log, for error messages.
func (c *Cluster) tailLog() string {
	b, err := os.ReadFile(c.Log())
	if err != nil {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "server log (end):\n" + string(b)
}

// Start starts the (stopped) server and waits until it accepts connections.
func (c *Cluster) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.pgctl(ctx, "start", "-w", "-t", "60", "-o", c.serverOptions()); err != nil {
		return err
	}
	c.running = true
	return nil
}

// Stop stops the server with the given shutdown mode: "fast" (roll back
// sessions, disconnect clients, checkpoint) or "immediate" (a crash: no
// checkpoint, recovery at the next start).
func (c *Cluster) Stop(ctx context.Context, mode string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running {
		return nil
	}
	if err := c.pgctl(ctx, "stop", "-w", "-t", "60", "-m", mode); err != nil {
		return err
	}
	c.running = false
	return nil
}

// Restart runs pg_ctl restart with the given mode ("fast" or "immediate")
// and waits until the server accepts connections again; it returns how long
// the server was unavailable, as pg_ctl measured it.
func (c *Cluster) Restart(ctx context.Context, mode string) (time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := time.Now()
	err := c.pgctl(ctx, "restart", "-w", "-t", "60", "-m", mode, "-o", c.serverOptions())
	c.running = err == nil
	return time.Since(start), err
}

// Ping reports whether the server answers a query on the mill database.
func (c *Cluster) Ping(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.URL(Database))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var one int
	return conn.QueryRow(ctx, "select 1").Scan(&one)
}

func (c *Cluster) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Stop(ctx, "immediate"); err != nil {
		c.t.Logf("pgcluster: stop: %v", err)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
