package main

import (
	"bufio"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPauseExitsOnSignal builds pause and checks that SIGTERM and SIGINT
// each end it with status 0. Outside a pid namespace pause warns that it
// is not PID 1, after its handler is installed: the test signals then.
func TestPauseExitsOnSignal(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pause")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewReader(stderr)
			first, err := lines.ReadString('\n')
			if !strings.Contains(first, "should be the first process") {
				t.Fatalf("first line on stderr %q (%v), want the warning that pause is not PID 1", first, err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(lines)
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("pause after %v: %v, want exit status 0", sig, err)
				}
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("pause still running 10s after %v", sig)
			}
			if !strings.Contains(string(rest), "shutting down") {
				t.Errorf("stderr after the signal %q does not say it is shutting down", rest)
			}
		})
	}
}
