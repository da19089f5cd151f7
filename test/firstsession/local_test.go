package firstsession

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
)

// TestMakeLocal runs scripts/local.sh (make local after make up and make
// build) with the binaries and names of this test: it sets up, loads the
// demo, starts Workman, the producers and the console, and says where to
// look; the console and Workman answer; the producers ran; and a Ctrl-C (SIGINT to
// the whole process group, as a terminal sends it) stops every process it
// started and it exits 0.
func TestMakeLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole mill on the emulator")
	}
	m := newMill(t)
	dir := t.TempDir()
	workmanAddr := testbin.FreeAddr(t) // Workman's /healthz
	sh := testbin.Start(t, testbin.Spec{Path: "bash", Args: []string{filepath.Join(testbin.ModuleRoot(t), "scripts", "local.sh")},
		Env: append(m.env, "MILL_BIN="+m.binDir, "MILL_LOCAL_DIR="+dir, "MILL_LISTEN=127.0.0.1:0", "MILL_HTTP_ADDR="+workmanAddr,
			"MILL_ITEMS=5", "MILL_LOCAL_TICK=1", "MILL_LOCAL_FREQUENCY=0"),
		Setpgid: true, Grace: 5 * time.Second})
	pgid := sh.Cmd.Process.Pid
	defer func() { t.Logf("make local:\n%s", sh.Output()) }()

	sh.WaitLine(t, 5*time.Minute, "Ctrl-C stops everything.")
	url := regexp.MustCompile(`console +(http://127\.0\.0\.1:\d+)`).FindStringSubmatch(sh.Output())
	if url == nil {
		t.Fatal("make local printed no console URL")
	}
	resp, err := http.Get(url[1] + "/")
	if err != nil {
		t.Fatalf("the console: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the console answered %s", resp.Status)
	}
	// Workman serves /healthz once it has opened its queues and stores.
	if !testbin.Poll(time.Minute, 200*time.Millisecond, func() bool {
		resp, err = http.Get("http://" + workmanAddr + "/healthz")
		return err == nil
	}) {
		b, _ := os.ReadFile(filepath.Join(dir, "workman.log"))
		t.Fatalf("Workman: %v\n%s", err, b)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("Workman's /healthz answered %s", resp.Status)
	}
	for _, p := range []string{"dupproducer.log", "bitproducer.log"} {
		var b []byte
		if !testbin.Poll(2*time.Minute, 200*time.Millisecond, func() bool {
			b, _ = os.ReadFile(filepath.Join(dir, p))
			return strings.Contains(string(b), "done after")
		}) {
			t.Fatalf("%s: no run done:\n%s", p, b)
		}
	}

	// Ctrl-C.
	sh.Signal(t, syscall.SIGINT)
	if err := sh.Wait(t, time.Minute); err != nil {
		t.Errorf("make local after Ctrl-C: %v", err)
	}
	if !strings.Contains(sh.Output(), "make local: stopped") {
		t.Error("make local did not say it stopped")
	}
	// Nothing it started is left.
	var alive error
	if !testbin.Poll(5*time.Second, 100*time.Millisecond, func() bool {
		alive = syscall.Kill(-pgid, 0)
		return errors.Is(alive, syscall.ESRCH)
	}) {
		ps, _ := exec.Command("ps", "-o", "pid,pgid,args", "-e").CombinedOutput()
		t.Fatalf("processes of make local left after Ctrl-C (kill -0: %v)\n%s", alive, ps)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "workman.log")); err != nil || !strings.Contains(string(b), "stopped") && !strings.Contains(string(b), "shut") {
		t.Logf("workman.log:\n%s", b)
	}
}
