package services

import (
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
)

// defaults runs script with an environment that sets none of Mill's
// variables and returns what it prints.
func defaults(t *testing.T, script string, args ...string) string {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(testbin.ModuleRoot(t), script)}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v", script, args, err)
	}
	return string(out)
}

// exported returns the value of `export NAME=value` in out.
func exported(t *testing.T, out, name string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "export "+name+"="); ok {
			return strings.Trim(v, `'"`)
		}
	}
	t.Fatalf("no %s in:\n%s", name, out)
	return ""
}

func port(t *testing.T, raw string) int {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("%q has no port", raw)
	}
	return p
}

// mysqlPort returns the port of a Go MySQL DSN as env.sh prints it (%q
// escapes its parentheses).
func mysqlPort(t *testing.T, raw string) int {
	t.Helper()
	cfg, err := mysql.ParseDSN(strings.ReplaceAll(raw, `\`, ""))
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	_, p, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("%q has no port", raw)
	}
	return n
}

// TestDefaultPortsOutsideEphemeralRange: a port inside the range can be
// taken by any outgoing connection's local end, and `make up` then fails
// with "address already in use" (PostgreSQL's old default, 55432, did).
func TestDefaultPortsOutsideEphemeralRange(t *testing.T) {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		if testenv.InCI() {
			t.Fatalf("CI=true: no ephemeral port range to check: %v", err)
		}
		t.Skipf("no ephemeral port range on this system: %v", err)
	}
	f := strings.Fields(string(raw))
	lo, _ := strconv.Atoi(f[0])
	hi, _ := strconv.Atoi(f[1])
	env := defaults(t, "localstack/env.sh")
	ports := map[string]int{
		"moto (AWS_ENDPOINT_URL)":        port(t, exported(t, env, "AWS_ENDPOINT_URL")),
		"PostgreSQL (MILL_DATABASE_URL)": port(t, exported(t, env, "MILL_DATABASE_URL")),
		"MariaDB (MILL_MYSQL_URL)":       mysqlPort(t, exported(t, env, "MILL_MYSQL_URL")),
		"LocalStack (host.sh)":           port(t, exported(t, defaults(t, "localstack/host.sh", "env"), "AWS_ENDPOINT_URL")),
	}
	for name, p := range ports {
		if p >= lo && p <= hi {
			t.Errorf("%s default port %d lies in the ephemeral range %d-%d", name, p, lo, hi)
		}
	}
}

// TestShimBindsWildcardToLoopback preloads the shim into a Python process
// that binds the wildcard addresses, as LocalStack's gateway and DynamoDB
// Local do.
func TestShimBindsWildcardToLoopback(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		if testenv.InCI() {
			t.Fatal("CI=true: python3 is needed to probe the shim")
		}
		t.Skip("python3 not installed")
	}
	root := testbin.ModuleRoot(t)
	lib := filepath.Join(t.TempDir(), "loopback.so")
	if out, err := exec.Command("cc", "-shared", "-fPIC", "-O2", "-o", lib, filepath.Join(root, "localstack", "loopback.c"), "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	const probe = `
import socket
def bound(family, kind, host):
    s = socket.socket(family, kind)
    s.bind((host, 0))
    return s.getsockname()[0]
print(bound(socket.AF_INET, socket.SOCK_STREAM, "0.0.0.0"))
print(bound(socket.AF_INET6, socket.SOCK_STREAM, "::"))
print(bound(socket.AF_INET, socket.SOCK_DGRAM, "0.0.0.0"))
print(bound(socket.AF_INET, socket.SOCK_STREAM, "127.0.0.1"))
`
	run := func(env ...string) []string {
		cmd := exec.Command("python3", "-c", probe)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("python3: %v\n%s", err, out)
		}
		return strings.Fields(string(out))
	}
	if got := run(); got[0] != "0.0.0.0" || got[1] != "::" {
		t.Fatalf("without the shim the probe bound %v: it does not exercise wildcard binds", got)
	}
	got := run("LD_PRELOAD=" + lib)
	want := []string{"127.0.0.1", "::1", "0.0.0.0", "127.0.0.1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("with the shim: bound %v, want %v (stream wildcards to loopback, a datagram socket untouched)", got, want)
	}
}

// TestServicesListenOnLoopbackOnly asks lib.sh's assert_loopback, the check
// the scripts run after each start, about every service the scripts started
// and still run.
func TestServicesListenOnLoopbackOnly(t *testing.T) {
	root := testbin.ModuleRoot(t)
	state := filepath.Join(root, ".local")
	pidfiles := map[string]string{
		"moto server": filepath.Join(state, "moto.pid"),
		"LocalStack":  filepath.Join(state, "localstack.pid"),
		"PostgreSQL":  filepath.Join(state, "pgdata", "postmaster.pid"),
		"MariaDB":     filepath.Join(state, "mariadb.pid"),
	}
	checked := 0
	for name, file := range pidfiles {
		raw, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0]))
		if err != nil || syscall.Kill(pid, 0) != nil {
			continue
		}
		cmd := exec.Command("bash", "-c", `log() { echo "$*"; }; . localstack/lib.sh; assert_loopback "$1" "$2"`, "check", name, strconv.Itoa(pid))
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s (pid %d): %v %s", name, pid, err, out)
		}
		checked++
	}
	if checked == 0 {
		if testenv.InCI() {
			t.Fatal("CI=true: no service started by localstack/up.sh is running (make up)")
		}
		t.Skip("no service started by the scripts is running")
	}
	t.Logf("%d services checked", checked)
}
