package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/test/podrunner"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "up" && os.Args[1] != "down") {
		fmt.Fprintln(os.Stderr, "usage: localcluster up --dir DIR [--bin DIR] | down --dir DIR[,DIR...]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", ".cache/cluster", "where the cluster keeps its state and logs")
	bin := fs.String("bin", "bin", "where the control-plane binaries are")
	_ = fs.Parse(os.Args[2:])
	if err := run(os.Args[1], *dir, *bin); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

func run(cmd, dir, bin string) error {
	if cmd == "down" {
		return down(strings.Split(dir, ","))
	}
	if _, err := os.Stat(filepath.Join(dir, "state.json")); err == nil {
		return fmt.Errorf("a cluster already runs in %s; stop it with make cluster-down", dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Options{BinDir: bin, Dir: dir, Detach: true})
	if err != nil {
		return err
	}
	fmt.Printf("local control plane is up; logs in %s\n\n  export KUBECONFIG=%s\n  kubectl get nodes\n\nstop it with: make cluster-down\n",
		filepath.Join(c.Dir(), "logs"), c.Kubeconfig())
	return nil
}

// down stops the clusters running in dirs, and removes the bridges and
// network namespaces of pod runners that were killed (a demo's, say).
func down(dirs []string) error {
	stopped := 0
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "state.json")); err != nil {
			continue
		}
		if err := cluster.Down(dir); err != nil {
			return err
		}
		fmt.Println("stopped the local control plane in", dir)
		stopped++
	}
	if stopped == 0 {
		fmt.Println("no local control plane was running in", strings.Join(dirs, " or "))
	}
	if os.Geteuid() != 0 {
		return nil // pod runners run as root; nothing of theirs to remove
	}
	for _, dir := range dirs {
		// A pod runner beside the cluster (test/env keeps its pods in
		// ../pods) may have been killed with tmpfs volumes mounted.
		if err := podrunner.UnmountUnder(filepath.Join(filepath.Dir(dir), "pods")); err != nil {
			return err
		}
	}
	cleaned, err := podrunner.RemoveLeftovers()
	if err != nil {
		return fmt.Errorf("remove pod runners' leftovers: %w", err)
	}
	for _, bridge := range cleaned {
		fmt.Printf("removed bridge %s and its pods' network namespaces, left by a pod runner that was killed\n", bridge)
	}
	return nil
}
