package main

import (
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Targets of issue 29: sparklet at most 0.6× cluster mode's time to
// nothing left and 0.5× its API requests.
const (
	e2eTimeTarget     = 0.6
	e2eRequestsTarget = 0.5
)

func e2eReport(r *report, e *e2eEnv, jobs []e2eJob, results map[string][]*e2eRun, loads [2]string, installed time.Duration) {
	k8s := "?"
	if v, err := e.node.Client.Discovery().ServerVersion(); err == nil {
		k8s = v.GitVersion
	}
	r.line("# Spark jobs through sparklet and through spark-submit --deploy-mode cluster")
	r.line("")
	r.line("%s; %d CPUs (%s/%s), %s; Kubernetes %s; Spark %s; sparklet %s. Reproduce: `make bench-e2e` (options: `go run ./bench e2e -h`).",
		time.Now().UTC().Format("2006-01-02 15:04 MST"), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), k8s, e.dist.Version, gitVersion())
	r.line("")
	r.line("On the real node (docs/real-node.md) with the chart installed by helm and the policy [`%s`](../../%s), the same jobs run through **sparklet**, `kubectl apply` of a plain driver pod in a namespace that has opted in, and through **cluster mode**, `spark-submit --deploy-mode cluster` of Spark %s on this machine against the node's API server (the admin kubeconfig as its credential, a ServiceAccount with a Role on pods, Services, ConfigMaps and PVCs for its driver, in a namespace that has not opted in), taking turns. Both ask for the same executors (`%s`) of image `apache/spark:%s`. `spark-pi` is SparkPi with 100 slices ([`examples/spark-pi-pod.yaml`](../../examples/spark-pi-pod.yaml)); `groupcount` is [`examples/groupcount.py`](../../examples/groupcount.py), a PySpark groupBy with a shuffle, its script from a ConfigMap mounted at `/opt/job` (a pod template in cluster mode).",
		nodeBenchPolicy, nodeBenchPolicy, e.dist.Version, strings.Join(e2eConf, " "), e.dist.Version)
	r.line("")
	r.line("Times are from the `kubectl apply` or the start of `spark-submit` to: the first executor pod `Running`; the driver pod `Succeeded` (its log then holds the job's right answer, which the bench checks); and, after the bench deletes the driver pod at once, no pod, ConfigMap or Service of the application left in the namespace. spark-submit waits for the application, as it does by default.")
	r.line("")
	r.line("API requests are the API server's `apiserver_request_total` over the run (from just before the apply or submit to %s after nothing is left), by resource and verb, with non-resource requests (discovery, `/metrics`) left out and two things taken away: the bench's own requests (its watch of the namespace's pods, its polls for what is left, the driver's log and the delete, counted by its client as the API server counts them) and the node's background (the kubelet's, the controllers', CoreDNS's, kube-proxy's and the webhook pods' own requests, their leases and re-established watches), counted over a quiet window of %s just before each run with nothing of the bench running, pooled over all the runs' windows into one rate per resource and verb, and taken away at that rate for the run's length. What is left of the background is noise of a few requests a run either way, mostly WATCH re-establishments that fall at random times. Every request any client made for the job counts: kubectl's or spark-submit's, the driver's and the sidecar's, the scheduler's, the kubelet's status updates and Events, the garbage collector's.",
		e2eSettle, e.quiet)
	r.line("")
	var rows []string
	var verdicts []string
	for _, job := range jobs {
		runs := results[job.name]
		s, c := med(runs, sideSparklet), med(runs, sideCluster)
		for _, m := range []struct {
			side e2eSide
			v    e2eMedians
		}{{sideSparklet, s}, {sideCluster, c}} {
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s | %.0f |", job.name, m.side, rd(m.v.executorRunning), rd(m.v.succeeded), rd(m.v.leftNone), m.v.requests))
		}
		timeRatio, reqRatio := s.leftNone.Seconds()/c.leftNone.Seconds(), s.requests/c.requests
		rows = append(rows, fmt.Sprintf("| %s | **sparklet / cluster mode** | **%.2f×** | **%.2f×** | **%.2f×** | **%.2f×** |", job.name,
			s.executorRunning.Seconds()/c.executorRunning.Seconds(), s.succeeded.Seconds()/c.succeeded.Seconds(), timeRatio, reqRatio))
		verdicts = append(verdicts, fmt.Sprintf("- %s: sparklet took %.2f× cluster mode's time to nothing left (target at most %.1f×: %s) with %.2f× its API requests (target at most %.1f×: %s).",
			job.name, timeRatio, e2eTimeTarget, metOrMissed(timeRatio <= e2eTimeTarget), reqRatio, e2eRequestsTarget, metOrMissed(reqRatio <= e2eRequestsTarget)))
	}
	r.line("Medians of %d runs each:", len(results[jobs[0].name])/2)
	r.line("")
	r.table("| job | through | → first executor Running | → result (driver Succeeded) | → nothing left | API requests |", rows)
	for _, v := range verdicts {
		r.line("%s", v)
	}
	r.line("")
	r.line("The machine's load average (1 minute) was %s before the first run and %s after the last; the node's pods share one cgroup under everything else the machine runs (bench/results/node.md). Set-up, not timed in the runs: the control plane %s, the node Ready with cluster DNS %s later, the chart installed and rolled out in %s.",
		loads[0], loads[1], rd(e.node.ControlPlaneUp), rd(e.node.NodeUp), rd(installed))
	r.line("")
	for _, job := range jobs {
		e2eTimelineTable(r, job, results[job.name])
		e2eRequestTable(r, job, results[job.name])
	}
	r.line("## Every run")
	r.line("")
	rows = nil
	for _, job := range jobs {
		for i, run := range results[job.name] {
			rows = append(rows, fmt.Sprintf("| %s | %d | %s | %s | %s | %s | %.0f |", job.name, i/2+1, run.side, rd(run.executorRunning), rd(run.succeeded), rd(run.leftNone), sum(run.requests)))
		}
	}
	r.table("| job | run | through | → first executor Running | → result | → nothing left | API requests |", rows)
	rows = nil
	for _, job := range jobs {
		runs := results[job.name]
		for i := 0; i+1 < len(runs); i += 2 {
			s, c := runs[i], runs[i+1]
			if s.side != sideSparklet {
				s, c = c, s
			}
			rows = append(rows, fmt.Sprintf("| %s | %d | %.2f× | %.2f× |", job.name, i/2+1, s.leftNone.Seconds()/c.leftNone.Seconds(), sum(s.requests)/sum(c.requests)))
		}
	}
	r.line("Each pair's ratios (the two runs next to each other, under the same load):")
	r.line("")
	r.table("| job | run | sparklet / cluster mode, time to nothing left | API requests |", rows)
}

// e2eMedians are the medians of one side's runs.
type e2eMedians struct {
	driverCreated, driverScheduled, driverRunning, executorCreated, executorRunning, succeeded, submitExited, leftNone time.Duration
	requests                                                                                                           float64
}

func med(runs []*e2eRun, side e2eSide) e2eMedians {
	var m e2eMedians
	pick := func(f func(*e2eRun) time.Duration) time.Duration {
		var ds []time.Duration
		for _, r := range runs {
			if r.side == side {
				ds = append(ds, f(r))
			}
		}
		return median(ds)
	}
	m.driverCreated = pick(func(r *e2eRun) time.Duration { return r.driverCreated })
	m.driverScheduled = pick(func(r *e2eRun) time.Duration { return r.driverScheduled })
	m.driverRunning = pick(func(r *e2eRun) time.Duration { return r.driverRunning })
	m.executorCreated = pick(func(r *e2eRun) time.Duration { return r.executorCreated })
	m.executorRunning = pick(func(r *e2eRun) time.Duration { return r.executorRunning })
	m.succeeded = pick(func(r *e2eRun) time.Duration { return r.succeeded })
	m.submitExited = pick(func(r *e2eRun) time.Duration { return r.submitExited })
	m.leftNone = pick(func(r *e2eRun) time.Duration { return r.leftNone })
	m.requests = medianOf(runs, side, func(r *e2eRun) float64 { return sum(r.requests) })
	return m
}

// medianOf is the median of f over side's runs; the upper middle one of
// an even count, as median.
func medianOf(runs []*e2eRun, side e2eSide, f func(*e2eRun) float64) float64 {
	var vs []float64
	for _, r := range runs {
		if r.side == side {
			vs = append(vs, f(r))
		}
	}
	slices.Sort(vs)
	return vs[len(vs)/2]
}

// e2eTimelineTable is where the time of each side goes: the medians of
// each step, from the apply or submit.
func e2eTimelineTable(r *report, job e2eJob, runs []*e2eRun) {
	s, c := med(runs, sideSparklet), med(runs, sideCluster)
	r.line("## %s: where the time goes", job.name)
	r.line("")
	r.line("Medians from the apply or submit, as the bench's watch of the namespace's pods saw each step.")
	r.line("")
	steps := []struct {
		name string
		s, c time.Duration
	}{
		{"driver pod created", s.driverCreated, c.driverCreated},
		{"driver pod scheduled", s.driverScheduled, c.driverScheduled},
		{"driver pod Running", s.driverRunning, c.driverRunning},
		{"first executor pod created", s.executorCreated, c.executorCreated},
		{"first executor pod Running", s.executorRunning, c.executorRunning},
		{"driver pod Succeeded", s.succeeded, c.succeeded},
		{"spark-submit exited", 0, c.submitExited},
		{"nothing left (after the delete)", s.leftNone, c.leftNone},
	}
	var rows []string
	for _, st := range steps {
		sv := rd(st.s)
		if st.s == 0 {
			sv = "–"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s |", st.name, sv, rd(st.c)))
	}
	r.table("| step | sparklet | cluster mode |", rows)
	r.line("- To the driver pod: sparklet %s (kubectl and the webhook), cluster mode %s (the spark-submit JVM starting on this machine and building the driver's spec).", rd(s.driverCreated), rd(c.driverCreated))
	r.line("- Driver pod created to Running (scheduling, sandbox, sparklet's init containers and native sidecar): sparklet %s, cluster mode %s.", rd(s.driverRunning-s.driverCreated), rd(c.driverRunning-c.driverCreated))
	r.line("- Driver Running to the first executor pod created (the driver JVM's start up to its first executor request): sparklet %s, cluster mode %s.", rd(s.executorCreated-s.driverRunning), rd(c.executorCreated-c.driverRunning))
	r.line("- First executor pod created to Running: sparklet %s, cluster mode %s.", rd(s.executorRunning-s.executorCreated), rd(c.executorRunning-c.executorCreated))
	r.line("- First executor Running to the driver Succeeded (the executors' JVMs starting and registering, the job, the driver stopping; the same work either way): sparklet %s, cluster mode %s.", rd(s.succeeded-s.executorRunning), rd(c.succeeded-c.executorRunning))
	r.line("")
}

// e2eRequestTable is each side's median requests by resource and verb.
func e2eRequestTable(r *report, job e2eJob, runs []*e2eRun) {
	keys := map[string]bool{}
	for _, run := range runs {
		for k := range run.requests {
			keys[k] = true
		}
	}
	r.line("## %s: API requests by resource and verb", job.name)
	r.line("")
	r.line("Medians over the runs of each side, net of the bench's own requests and the node's background (above); rows where both round to zero are left out, and the medians of the rows need not add up to the median of the totals.")
	r.line("")
	var rows []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		s := medianOf(runs, sideSparklet, func(run *e2eRun) float64 { return run.requests[k] })
		c := medianOf(runs, sideCluster, func(run *e2eRun) float64 { return run.requests[k] })
		if math.Abs(s) < 0.5 && math.Abs(c) < 0.5 {
			continue
		}
		resource, verb, _ := strings.Cut(k, " ")
		rows = append(rows, fmt.Sprintf("| %s | %s | %.0f | %.0f |", resource, verb, s, c))
	}
	s, c := med(runs, sideSparklet).requests, med(runs, sideCluster).requests
	rows = append(rows, fmt.Sprintf("| **all** | | **%.0f** | **%.0f** |", s, c))
	r.table("| resource | verb | sparklet | cluster mode |", rows)
	own := func(side e2eSide) float64 {
		return medianOf(runs, side, func(run *e2eRun) float64 {
			t := 0.0
			for _, k := range podLifecycle {
				t += run.requests[k]
			}
			return t
		})
	}
	r.line("The pods' own lifecycle (%s: the create, the scheduler's binding, the kubelet's reads and status updates, the executors' deletes and the kubelet's final ones, and the Events of the kubelet, the scheduler and the sidecar) is %.0f of cluster mode's %.0f requests, which any way of running these three pods pays (%.2f×), and %.0f of sparklet's, whose driver pod has two more containers (the conf init container and the native sidecar) for the kubelet to report on and whose sidecar records its own Events.",
		strings.Join(podLifecycle, ", "), own(sideCluster), c, own(sideCluster)/c, own(sideSparklet))
	r.line("")
}

// podLifecycle are the requests that a pod's own life costs, whoever
// created it.
var podLifecycle = []string{"pods POST", "pods/binding POST", "pods GET", "pods/status PATCH", "pods DELETE", "events POST", "events.events.k8s.io POST"}

func rd(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }

func metOrMissed(met bool) string {
	if met {
		return "met"
	}
	return "**missed**"
}
