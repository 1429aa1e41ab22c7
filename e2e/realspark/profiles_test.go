package realspark

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/test/executors"
	"github.com/sparklet/sparklet/test/sleepyjob"
	"github.com/sparklet/sparklet/vocab"
)

// TestResourceProfiles runs stage-level scheduling (testdata/profiles.py)
// under dynamic allocation with shuffle tracking, which Spark on
// Kubernetes requires for it (ResourceProfileManager.isSupported, 3.5 to
// 4.3): a job on the default profile and one on a profile of 640m
// executors run at once, then a task asks for a profile of 1g executors.
// The namespace's policy (testdata/policy.yaml) enforces
// spark.executor.memoryOverhead and caps executors at 1Gi. The profile's
// executors keep their own heap under the enforced overhead, the 1g
// executors are refused naming the memory limit, and Spark keeps its
// pending-pod limits per profile
// (spark.kubernetes.allocation.maxPendingPodsPerRp, 4.1+) or in all
// (spark.kubernetes.allocation.maxPendingPods, 3.2+). On 3.5 and 4.0 the
// policy allows 2 executors in all, which the two profiles, at 2 each
// (spark.dynamicAllocation.maxExecutors is per profile), exceed: the
// sidecar refuses the excess and both jobs finish. Spark 4.3 counts
// every refused creation as an executor failure (ExecutorPodsAllocator's
// registerPodCreationFailure, SPARK-55075: in the 4.3.0 jar, not in 4.0.5;
// 4.1 and 4.2 not checked) and stops the application after
// spark.executor.maxNumFailures (here 4), so from 4.1 on the policy
// allows 4.
func TestResourceProfiles(t *testing.T) {
	t.Parallel()
	for _, d := range failureDists(t) {
		t.Run(d.Version, func(t *testing.T) { resourceProfiles(t, d) })
	}
}

func resourceProfiles(t *testing.T, d spark.Dist) {
	pendingKey, pendingOf := "spark.kubernetes.allocation.maxPendingPods", executors.AllProfiles
	limit, refusals := 2, true
	if d.Major > 4 || d.Major == 4 && d.Minor >= 1 {
		pendingKey, pendingOf = "spark.kubernetes.allocation.maxPendingPodsPerRp", ""
		limit, refusals = 4, false
	}
	job := sleepy{tasks: 4, sleepMS: 4000, script: "profiles.py", conf: profilesConf + pendingKey + " 1\n"}
	ns, execs, appID := job.run(t, d)
	waitFor(t, ns, "both jobs' sums in the driver's log", 5*time.Minute, func() bool {
		return strings.Contains(log(ns, sleepyDriver, "spark"), "profiles: default sum")
	})
	driverLog := log(ns, sleepyDriver, "spark")
	if !strings.Contains(driverLog, "profiles: default sum 6, profile sum 6") {
		t.Errorf("the jobs' sums are not both 6:\n%s", driverLogTail(ns, sleepyDriver))
	}
	if _, most, _, _ := execs.Counts(); most > limit {
		t.Errorf("%d executors alive at once, over the policy's limits.maxExecutors=%d", most, limit)
	}
	refusedAtLimit := strings.Contains(driverLog, fmt.Sprintf("the policy limit limits.maxExecutors=%d", limit))
	if refusals && !refusedAtLimit {
		t.Errorf("the driver's log has no executor refused at limits.maxExecutors=%d: the two profiles never asked for more together", limit)
	}
	if !refusals && refusedAtLimit {
		t.Errorf("an executor was refused at limits.maxExecutors=%d, which the two profiles' 2 each should not reach", limit)
	}
	sizes := map[string]string{"0": "896Mi 512m", "1": "1Gi 640m"}
	byProfile := map[string]int{}
	for _, p := range execs.Pods() {
		rp := p.Labels[vocab.LabelResourceProfileID]
		byProfile[rp]++
		c := p.Spec.Containers[0]
		got := c.Resources.Requests.Memory().String() + " " + envValue(p, "SPARK_EXECUTOR_MEMORY")
		if want, ok := sizes[rp]; !ok || got != want {
			t.Errorf("executor %s of resource profile %q: memory and heap %s, want %q", p.Name, rp, got, want)
		}
		if lim := c.Resources.Limits.Memory(); !lim.Equal(*c.Resources.Requests.Memory()) {
			t.Errorf("executor %s: memory limit %s, request %s", p.Name, lim, c.Resources.Requests.Memory())
		}
		if p.Labels[vocab.LabelManaged] != "true" {
			t.Errorf("executor %s was not created through the sidecar: no %s label", p.Name, vocab.LabelManaged)
		}
	}
	if byProfile["0"] == 0 || byProfile["1"] == 0 {
		t.Errorf("executors by resource profile %v, want some of profiles 0 and 1", byProfile)
	}
	pending := execs.MostPendingAtOnce()
	for rp, n := range pending {
		if (pendingOf == executors.AllProfiles) == (rp == executors.AllProfiles) && n > 1 {
			t.Errorf("%d executors of resource profile %q pending at once, over %s=1", n, rp, pendingKey)
		}
	}

	waitFor(t, ns, "the executor over the limit refused in the driver's log", 3*time.Minute, func() bool {
		return strings.Contains(log(ns, sleepyDriver, "spark"), "exceeds the policy limit limits.executor.maxMemory=1Gi")
	})
	for _, p := range execs.Pods() {
		if rp := p.Labels[vocab.LabelResourceProfileID]; rp != "0" && rp != "1" {
			t.Errorf("executor %s of resource profile %s reached the API server", p.Name, rp)
		}
	}
	if strings.Contains(log(ns, sleepyDriver, "spark"), "profiles: the executor over the limit ran") {
		t.Error("the task on the executor over the limit ran")
	}
	_, most, seen, _ := execs.Counts()
	t.Logf("Spark %s: %d executors by resource profile %v, at most %d alive at once; most pending at once %v (%s=1)",
		d.Version, seen, byProfile, most, pending, pendingKey)
	execs.CheckNoDuplicates(t)
	deleteDriver(t, ns)
	waitClean(t, ns, appID, 30*time.Second)
}

// profilesConf is dynamicConf with up to 2 executors per resource profile,
// of 100m CPU.
var profilesConf = strings.Replace(sleepyjob.DynamicConf(3), "spark.dynamicAllocation.maxExecutors 3\n", "spark.dynamicAllocation.maxExecutors 2\n", 1) +
	"spark.kubernetes.executor.request.cores 100m\n"
