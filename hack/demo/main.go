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
	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/test/podrunner"
)

const ns = "spark-demo"

func main() {
	bin := flag.String("bin", "bin", "sparklet, the control-plane binaries and spark/<version>")
	dir := flag.String("dir", ".cache/demo", "state and logs")
	emulated := flag.Bool("emulator", false, "kwok's fake nodes and the driver emulator instead of real JVMs; leaves the cluster running")
	keep := flag.Bool("keep", false, "keep the cluster and the pod runner running until interrupted, to look around with kubectl")
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
	if *emulated {
		err = runEmulator(ctx, absBin, absDir)
	} else {
		err = runReal(ctx, absBin, absDir, *keep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "\ndemo failed:", err)
		fmt.Fprintln(os.Stderr, "logs:", absDir)
		os.Exit(1)
	}
}

func step(format string, args ...any) { fmt.Printf("\n\033[1m==> "+format+"\033[0m\n", args...) }
func say(format string, args ...any)  { fmt.Printf("    "+format+"\n", args...) }

// kubectl runs kubectl as a user would and shows the command and its output.
func kubectl(ctx context.Context, env *testenv.Env, args ...string) {
	kubectlIn(ctx, env, nil, "", args...)
}

// kubectlIn is kubectl with stdin; shown names what stdin holds.
func kubectlIn(ctx context.Context, env *testenv.Env, stdin []byte, shown string, args ...string) {
	fmt.Printf("    $ kubectl %s%s\n", strings.Join(args, " "), shown)
	out, errOut, _ := env.Kubectl(ctx, stdin, args...)
	for _, line := range strings.Split(strings.TrimRight(out+errOut, "\n"), "\n") {
		fmt.Printf("      %s\n", line)
	}
}
