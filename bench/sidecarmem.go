package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/sparklet/sparklet/policy"
	testenv "github.com/sparklet/sparklet/test/env"
)

// sidecarScale is one sidecar serving n executors.
type sidecarScale struct {
	n                  int
	running            time.Duration
	rssKiB, cpuSeconds float64
	// anonKiB and fileKiB split the RSS at the end: the heap and runtime,
	// and the binary's pages.
	anonKiB, fileKiB float64
	listSidecar      time.Duration // a LIST of the executors, median
	// idleMillicores and idleRSSKiB are the sidecar's CPU and resident
	// memory over the idle window that follows.
	idleMillicores, idleRSSKiB float64
	listAPI                    time.Duration
	heap                       string // the heap profile's top, at the end
}

// sidecarMemory runs one sidecar per executor count, each with the
// emulated JVM allocating that many executors through it and one extra
// JVM-style watch, and reports its peak RSS, the LIST of the executors
// against the API server's, and its heap.
func sidecarMemory(ctx context.Context, env *testenv.Env, o options, r *report) error {
	var rows []sidecarScale
	for _, n := range o.sidecarExecutors {
		row, err := sidecarAt(ctx, env, o, n)
		if err != nil {
			return fmt.Errorf("sidecar with %d executors: %w", n, err)
		}
		fmt.Fprintf(os.Stderr, "bench: sidecar with %d executors: peak RSS %.1f MiB, LIST %s from the sidecar, %s from the API server\n",
			n, row.rssKiB/1024, row.listSidecar, row.listAPI)
		rows = append(rows, row)
	}
	r.line("## 6. The sidecar's memory and its LIST")
	r.line("")
	r.line("One sidecar per row, in its own namespace: the driver emulator (Spark 4.0, sparklet's batch) allocates the executors through it while one extra JVM-style watch follows them; once all run, the executors' LIST (`labelSelector=spark-role=executor,spark-exec-inactive!=true`, as Spark sends it) is sent 20 times to the sidecar and 20 times to the API server as the same plain HTTP GET with `Accept: application/json`, each body read to the end. Peak RSS is the sidecar's `VmHWM` after the LISTs.")
	r.line("")
	r.line("| executors | all Running | sidecar peak RSS | idle: CPU, RSS | RSS at the end: anonymous + file | CPU seconds | LIST from the sidecar | LIST from the API server | ratio |")
	r.line("|---|---|---|---|---|---|---|---|---|")
	for _, x := range rows {
		idleCPU := fmt.Sprintf("%.1fm", x.idleMillicores)
		if x.idleMillicores == 0 {
			// /proc counts CPU in 10 ms ticks.
			idleCPU = fmt.Sprintf("under %.1fm", 10/o.sidecarIdle.Seconds())
		}
		r.line("| %d | %s | **%.1f MiB** | %s, %.1f MiB | %.1f + %.1f MiB | %.1f | %s | %s | **%.2f×** |", x.n, x.running.Round(100*time.Millisecond), x.rssKiB/1024,
			idleCPU, x.idleRSSKiB/1024, x.anonKiB/1024, x.fileKiB/1024, x.cpuSeconds, x.listSidecar, x.listAPI, x.listSidecar.Seconds()/x.listAPI.Seconds())
	}
	r.line("")
	var defaults policy.Sidecar
	defaults.SetDefaults("")
	r.line("- Idle is the %s after all executors run (and after the LISTs): CPU in millicores, RSS at its end. The sidecar's default resources (policy `sidecar.resources`): requests %s, limits %s.",
		o.sidecarIdle, resourceList(defaults.Resources.Requests), resourceList(defaults.Resources.Limits))
	if len(rows) >= 2 {
		a, b := rows[0], rows[len(rows)-1]
		r.line("- Growth: %.1f KiB of peak RSS per executor between %d and %d executors.", (b.rssKiB-a.rssKiB)/float64(b.n-a.n), a.n, b.n)
		r.line("")
	}
	for _, x := range rows {
		r.line("The sidecar's heap with %d executors, after the LISTs (`go tool pprof -top -sample_index=inuse_space`):", x.n)
		r.line("")
		r.line("```")
		r.line("%s", x.heap)
		r.line("```")
		r.line("")
	}
	return nil
}

func sidecarAt(ctx context.Context, env *testenv.Env, o options, n int) (sidecarScale, error) {
	row := sidecarScale{n: n}
	ns := fmt.Sprintf("bench-sidecar-%d", n)
	if err := newNamespace(ctx, env, ns, true); err != nil {
		return row, err
	}
	sc, err := startSidecar(ctx, env, ns, "driver", "--profiling")
	if err != nil {
		return row, err
	}
	defer stopSidecar(sc)
	jvm, _, err := sidecarEmulator(sc)
	if err != nil {
		return row, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if err := jvm.Start(runCtx); err != nil {
		return row, err
	}
	start := time.Now()
	run := watchRunning(runCtx, env.Client, ns, n, start)
	countWatchEvents(runCtx, sc, ns)
	jvm.SetTarget(n)
	deadline := time.After(15 * time.Minute)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	// With no executors there is nothing to wait for.
	for waiting := n > 0; waiting; {
		select {
		case <-run.done:
			waiting = false
		case <-tick.C:
			// A refusal (the policy's limits.maxExecutors, a quota) is
			// retried by the JVM for ever: stop at the first.
			if st := jvm.Stats(); strings.Contains(st.LastCreateError, "HTTP 403") {
				return row, fmt.Errorf("executor creates refused after %d: %s", st.Created, st.LastCreateError)
			}
		case <-deadline:
			st := jvm.Stats()
			return row, fmt.Errorf("not all %d executors Running after 15 minutes (%d created, last error: %s)", n, st.Created, st.LastCreateError)
		}
	}
	row.running = run.at
	row.idleMillicores, row.idleRSSKiB = idleUse(ctx, sc.PID(), o.sidecarIdle)
	if row.listSidecar, row.listAPI, err = listTimes(ctx, env, ns, sc); err != nil {
		return row, err
	}
	row.rssKiB, row.cpuSeconds = procStats(sc.PID())
	row.anonKiB, row.fileKiB = rssSplit(sc.PID())
	heap := filepath.Join(o.out, "profiles", fmt.Sprintf("sidecar-%d.heap.pprof", n))
	if err := download(ctx, http.DefaultClient, "http://"+sc.Metrics+"/debug/pprof/heap", heap); err != nil {
		row.heap = fmt.Sprintf("no heap profile: %v", err)
	} else {
		row.heap = heapTop(heap, 15)
	}
	_ = jvm.Stop(ctx)
	stop()
	cleanup(ctx, env, ns)
	return row, nil
}

// resourceList is "cpu 50m, memory 64Mi", sorted by name.
func resourceList(l corev1.ResourceList) string {
	var parts []string
	for name, q := range l {
		parts = append(parts, string(name)+" "+q.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// idleUse is a process's CPU in millicores and its resident memory at the
// end, over window.
func idleUse(ctx context.Context, pid int, window time.Duration) (millicores, rssKiB float64) {
	_, cpu0 := procStats(pid)
	select {
	case <-ctx.Done():
	case <-time.After(window):
	}
	_, cpu1 := procStats(pid)
	anon, file := rssSplit(pid)
	return (cpu1 - cpu0) * 1000 / window.Seconds(), anon + file
}

// listTimes times the JVM's executor LIST, as one plain HTTP GET read to
// the end, from the sidecar's cache and from the API server: medians of
// 20 each.
func listTimes(ctx context.Context, env *testenv.Env, ns string, sc *testenv.Sidecar) (fromSidecar, fromAPI time.Duration, err error) {
	token, err := sc.Token()
	if err != nil {
		return 0, 0, err
	}
	apiClient, err := rest.HTTPClientFor(env.Cluster.RESTConfig())
	if err != nil {
		return 0, 0, err
	}
	const n = 20
	path := "/api/v1/namespaces/" + ns + "/pods?labelSelector=spark-role%3Dexecutor%2Cspark-exec-inactive%21%3Dtrue"
	timeIt := func(client *http.Client, url, token string) (time.Duration, error) {
		var lat []time.Duration
		for i := 0; i < n; i++ {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			req.Header.Set("Accept", "application/json")
			t0 := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				return 0, err
			}
			_, err = drain(resp)
			resp.Body.Close()
			if err != nil {
				return 0, err
			}
			if resp.StatusCode != http.StatusOK {
				return 0, fmt.Errorf("LIST %s: %s", url, resp.Status)
			}
			lat = append(lat, time.Since(t0))
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		return lat[n/2].Round(100 * time.Microsecond), nil
	}
	if fromSidecar, err = timeIt(http.DefaultClient, "http://"+sc.Listen+path, token); err != nil {
		return 0, 0, err
	}
	fromAPI, err = timeIt(apiClient, env.Cluster.RESTConfig().Host+path, "")
	return fromSidecar, fromAPI, err
}

// rssSplit reads a live process's resident anonymous and file-backed
// memory (KiB).
func rssSplit(pid int) (anon, file float64) {
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "RssAnon:":
			anon, _ = strconv.ParseFloat(f[1], 64)
		case "RssFile:":
			file, _ = strconv.ParseFloat(f[1], 64)
		}
	}
	return anon, file
}

// heapTop is `go tool pprof -top` of a heap profile's in-use bytes, cut to
// its n heaviest functions.
func heapTop(file string, n int) string { return pprofTop(file, "inuse_space", false, n) }
