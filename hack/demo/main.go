package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/test/podrunner"
)

const ns = "spark-demo"

func main() {
	bin := flag.String("bin", "bin", "sparklet, the control-plane binaries and spark/<version>")
	dir := flag.String("dir", ".cache/demo", "state and logs")
	emulated := flag.Bool("emulator", false, "kwok's fake nodes and the driver emulator instead of real JVMs; leaves the cluster running")
	onRunner := flag.Bool("pod-runner", false, "run the pods on the pod runner (local processes, the webhook as a local process) instead of the real node with the chart installed by helm")
	keep := flag.Bool("keep", false, "keep the cluster and its node running until interrupted, to look around with kubectl")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	absBin, _ := filepath.Abs(*bin)
	absDir, _ := filepath.Abs(*dir)
	_ = cluster.Down(filepath.Join(absDir, "cluster")) // a previous --emulator demo's
	if os.Geteuid() == 0 {
		_ = podrunner.UnmountUnder(absDir) // a killed demo's pod volumes
	}
	if err := os.RemoveAll(absDir); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
	var err error
	switch {
	case *emulated:
		err = runEmulator(ctx, absBin, absDir)
	case *onRunner:
		err = runOnPodRunner(ctx, absBin, absDir, *keep)
	default:
		err = runOnNode(ctx, absBin, absDir, *keep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "\ndemo failed:", err)
		fmt.Fprintln(os.Stderr, "logs:", absDir)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("\n\033[1m==> "+format+"\033[0m\n", args...) }
func say(format string, args ...any)  { fmt.Printf("    "+format+"\n", args...) }

// kubectlRunner is a cluster kubectl runs against: test/env's or
// test/nodeenv's.
type kubectlRunner interface {
	Kubectl(ctx context.Context, stdin []byte, args ...string) (stdout, stderr string, err error)
}

// kubectl runs kubectl as a user would and shows the command and its output.
func kubectl(ctx context.Context, k kubectlRunner, args ...string) {
	kubectlIn(ctx, k, nil, "", args...)
}

// kubectlIn is kubectl with stdin; shown names what stdin holds.
func kubectlIn(ctx context.Context, k kubectlRunner, stdin []byte, shown string, args ...string) {
	out, errOut, _ := k.Kubectl(ctx, stdin, args...)
	showCommand("kubectl "+strings.Join(args, " ")+shown, out+errOut)
}

// showCommand shows a command as a user types it, and its output.
func showCommand(command, output string) {
	fmt.Printf("    $ %s\n", command)
	for _, line := range strings.Split(strings.TrimRight(output, "\n"), "\n") {
		fmt.Printf("      %s\n", line)
	}
}
