package patches

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sparklet/sparklet/vocab"
)

// The conf container, run by /bin/sh over made-up directories: its hook
// blocks until the conf is written, it stays after that, a restart leaves
// the written conf alone, and SIGTERM ends it with 0 at once.
func TestConfContainerOnceThenStays(t *testing.T) {
	root := t.TempDir()
	image, dst, info := filepath.Join(root, "image"), filepath.Join(root, "dst"), filepath.Join(root, "podinfo")
	for _, d := range []string{image, dst, info} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(image, ConfFile), "spark.image.only yes\n")
	write(filepath.Join(info, ConfFile), "spark.a=1\n")
	serving := servingFile(t, false)
	paths := strings.NewReplacer(ConfDir, dst, PodInfoDir, info, ServingFile, serving)
	script := paths.Replace(confContainerScript(&plan{}))
	hook := confReadyHook.PostStart.Exec.Command
	hookScript := paths.Replace(hook[len(hook)-1])

	// Before the sidecar serves, the hook does not return.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := exec.CommandContext(ctx, "/bin/sh", "-c", hookScript).Run(); ctx.Err() == nil {
		t.Fatalf("the hook returned (%v) before the conf was written", err)
	}

	start := func() (*exec.Cmd, chan error) {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Env = []string{vocab.EnvImageConfDir + "=" + image, "PATH=/usr/bin:/bin"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		return cmd, done
	}
	cmd, done := start()
	write(serving, "127.0.0.1:7000")
	hookDone := make(chan error, 1)
	go func() { hookDone <- exec.Command("/bin/sh", "-c", hookScript).Run() }()
	select {
	case err := <-hookDone:
		if err != nil {
			t.Fatalf("hook: %v", err)
		}
	case err := <-done:
		t.Fatalf("the conf container ended (%v) instead of staying", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the hook did not return within 10 s of the sidecar serving")
	}
	text, err := os.ReadFile(filepath.Join(dst, ConfFile))
	if err != nil || !strings.Contains(string(text), "spark.image.only yes") || !strings.HasSuffix(string(text), "spark.a=1\n") {
		t.Fatalf("spark-defaults.conf when the hook returned: %q, %v", text, err)
	}
	stop := func(cmd *exec.Cmd, done chan error) {
		t.Helper()
		select {
		case err := <-done:
			t.Fatalf("the conf container ended (%v) before its SIGTERM", err)
		default:
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("after SIGTERM: %v, want exit 0", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the conf container did not end within 10 s of SIGTERM")
		}
	}
	stop(cmd, done)

	// A restart (the kubelet restarts a native sidecar that ended) finds
	// the conf written and leaves it as the running JVM read it.
	write(filepath.Join(image, ConfFile), "spark.image.changed yes\n")
	cmd, done = start()
	if err := exec.Command("/bin/sh", "-c", hookScript).Run(); err != nil {
		t.Fatalf("hook after the restart: %v", err)
	}
	// The hook returns at once, maybe before the shell set its trap; the
	// shell has when it sleeps.
	waitSleeping(t, cmd.Process.Pid)
	stop(cmd, done)
	if again, _ := os.ReadFile(filepath.Join(dst, ConfFile)); string(again) != string(text) {
		t.Errorf("the restart rewrote spark-defaults.conf:\n%s\nwas:\n%s", again, text)
	}
}

// waitSleeping waits until the shell pid runs a sleep, which it starts
// only after it set its trap.
func waitSleeping(t *testing.T, pid int) {
	t.Helper()
	children := fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		list, _ := os.ReadFile(children)
		for _, child := range strings.Fields(string(list)) {
			if comm, _ := os.ReadFile("/proc/" + child + "/comm"); string(comm) == "sleep\n" {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the conf container's shell %d started no sleep within 10 s", pid)
}
