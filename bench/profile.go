package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// profiles is a CPU and an allocation profile taken over the same window
// from a process running with --profiling.
type profiles struct {
	cpu, allocs string // files
	err         error
	// flat reports them by each function's own weight: under a deep
	// handler chain, such as kube-apiserver's, the cumulative view shows
	// only the chain.
	flat bool
}

// takeProfiles starts a CPU profile and a delta allocation profile of
// seconds each from base (scheme://host); wait returns when both are
// written to dir as name.cpu.pprof and name.allocs.pprof.
func takeProfiles(ctx context.Context, client *http.Client, base, dir, name string, seconds int) (wait func() profiles) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	p := profiles{cpu: filepath.Join(dir, name+".cpu.pprof"), allocs: filepath.Join(dir, name+".allocs.pprof")}
	get := func(path, file string) {
		defer wg.Done()
		err := download(ctx, client, fmt.Sprintf("%s/debug/pprof/%s?seconds=%d", base, path, seconds), file)
		mu.Lock()
		if err != nil && p.err == nil {
			p.err = fmt.Errorf("%s %s profile: %w", name, path, err)
		}
		mu.Unlock()
	}
	wg.Add(2)
	go get("profile", p.cpu)
	go get("allocs", p.allocs)
	return func() profiles { wg.Wait(); return p }
}

func download(ctx context.Context, client *http.Client, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pprofTop is `go tool pprof -top` of a profile, by cumulative weight when
// cum is set, cut to its n heaviest functions, without the header lines.
func pprofTop(file, sampleIndex string, cum bool, n int) string {
	args := []string{"tool", "pprof", "-top", fmt.Sprintf("-nodecount=%d", n)}
	if cum {
		args = append(args, "-cum")
	}
	if sampleIndex != "" {
		args = append(args, "-sample_index="+sampleIndex)
	}
	out, err := exec.Command("go", append(args, file)...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("go tool pprof %s: %v\n%s", file, err, out)
	}
	var keep []string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		// The header names the binary and the time; the table and the
		// totals line are what matter.
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Type:") || strings.HasPrefix(l, "Time:") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// profiles adds both profiles' tops to the report.
func (r *report) profiles(title string, p profiles) {
	if p.err != nil {
		r.line("%s: no profile (%v).", title, p.err)
		r.line("")
		return
	}
	view := "-top -cum"
	if p.flat {
		view = "-top"
	}
	r.line("%s, CPU (`go tool pprof %s %s`):", title, view, filepath.Base(p.cpu))
	r.line("")
	r.line("```")
	r.line("%s", pprofTop(p.cpu, "", !p.flat, 20))
	r.line("```")
	r.line("")
	r.line("%s, allocated bytes (`-sample_index=alloc_space`):", title)
	r.line("")
	r.line("```")
	r.line("%s", pprofTop(p.allocs, "alloc_space", !p.flat, 15))
	r.line("```")
	r.line("")
}
