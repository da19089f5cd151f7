package firstsession

import (
	"context"
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

	"github.com/millfleet/mill/internal/testbin"
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", filepath.Join(testbin.ModuleRoot(t), "scripts", "local.sh"))
	workmanAddr := testbin.FreeAddr(t) // Workman's /healthz
	sh.Env = append(m.env, "MILL_BIN="+m.binDir, "MILL_LOCAL_DIR="+dir, "MILL_LISTEN=127.0.0.1:0", "MILL_HTTP_ADDR="+workmanAddr,
		"MILL_ITEMS=5", "MILL_LOCAL_TICK=1", "MILL_LOCAL_FREQUENCY=0")
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out testbin.Buffer
	sh.Stdout, sh.Stderr = &out, &out
	sh.Cancel = func() error { return syscall.Kill(-sh.Process.Pid, syscall.SIGKILL) }
	sh.WaitDelay = 5 * time.Second
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := sh.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	exited := make(chan error, 1)
	go func() { exited <- sh.Wait() }()
	defer func() { t.Logf("make local:\n%s", out.String()) }()

	for !strings.Contains(out.String(), "Ctrl-C stops everything.") {
		select {
		case err := <-exited:
			t.Fatalf("make local ended before it was running: %v", err)
		case <-ctx.Done():
			t.Fatal("make local was not running within 5 minutes")
		case <-time.After(100 * time.Millisecond):
		}
	}
	url := regexp.MustCompile(`console +(http://127\.0\.0\.1:\d+)`).FindStringSubmatch(out.String())
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
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		resp, err = http.Get("http://" + workmanAddr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("Workman's /healthz answered %s", resp.Status)
			}
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(dir, "workman.log"))
			t.Fatalf("Workman: %v\n%s", err, b)
		}
	}
	for _, p := range []string{"dupproducer.log", "bitproducer.log"} {
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
			b, _ := os.ReadFile(filepath.Join(dir, p))
			if strings.Contains(string(b), "done after") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no run done:\n%s", p, b)
			}
		}
	}

	// Ctrl-C.
	if err := syscall.Kill(-pgid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("make local after Ctrl-C: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("make local still running a minute after Ctrl-C")
	}
	if !strings.Contains(out.String(), "make local: stopped") {
		t.Error("make local did not say it stopped")
	}
	// Nothing it started is left.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		err := syscall.Kill(-pgid, 0)
		if errors.Is(err, syscall.ESRCH) {
			break
		}
		if time.Now().After(deadline) {
			ps, _ := exec.Command("ps", "-o", "pid,pgid,args", "-e").CombinedOutput()
			t.Fatalf("processes of make local left after Ctrl-C (kill -0: %v)\n%s", err, ps)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "workman.log")); err != nil || !strings.Contains(string(b), "stopped") && !strings.Contains(string(b), "shut") {
		t.Logf("workman.log:\n%s", b)
	}
}
