package emulator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/test/fakeapi"
)

const (
	ns    = "ns"
	appID = "spark-app1"
	// appSel is spark-app-selector=spark-app1,spark-role=executor encoded
	// as fabric8 encodes it.
	appSel = "spark-app-selector%3Dspark-app1%2Cspark-role%3Dexecutor"
)

type env struct {
	api    *fakeapi.API
	srv    *httptest.Server
	d      *Driver
	driver *corev1.Pod
	ctx    context.Context
}

func setup(t *testing.T, mode Mode, tweak func(*Config, *fakeapi.API)) *env {
	t.Helper()
	api := fakeapi.New()
	api.Token = "t"
	api.AutoRun = true
	driver := api.AddPod(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "driver", Namespace: ns, Labels: map[string]string{"spark-role": "driver"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	cfg := NewConfig(mode)
	cfg.Server, cfg.Token, cfg.Namespace, cfg.AppID = srv.URL, "t", ns, appID
	cfg.DriverPodName, cfg.PodNamePrefix, cfg.ExecutorImage = "driver", "app1", "spark:test"
	cfg.BatchDelay = 5 * time.Millisecond
	cfg.EventInterval = 5 * time.Millisecond
	cfg.PollInterval = time.Hour
	cfg.DeleteGracePeriod = time.Millisecond
	l := logrus.New()
	l.SetOutput(io.Discard)
	cfg.Log = logrus.NewEntry(l)
	if tweak != nil {
		tweak(&cfg, api)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	t.Cleanup(func() {
		d.mu.Lock()
		c := d.cancel
		d.mu.Unlock()
		if c != nil {
			c()
		}
		d.wg.Wait()
	})
	return &env{api: api, srv: srv, d: d, driver: driver, ctx: ctx}
}

func (e *env) start(t *testing.T) {
	t.Helper()
	if err := e.d.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
}

// started is setup with no tweak, started.
func started(t *testing.T, mode Mode) *env {
	t.Helper()
	e := setup(t, mode, nil)
	e.start(t)
	return e
}

// scale sets the executor target to n and waits until n executors run.
func (e *env) scale(t *testing.T, n int) {
	t.Helper()
	e.d.SetTarget(n)
	if err := e.d.WaitRunning(e.ctx, n); err != nil {
		t.Fatal(err)
	}
}

// calls renders recorded requests from index from on, "[WS ]METHOD path?query".
func (e *env) calls(from int) []string {
	var out []string
	for _, r := range e.api.Requests()[from:] {
		s := r.String()
		if r.WebSocket {
			s = "WS " + s
		}
		out = append(out, s)
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitRounds waits until n more allocator rounds have run.
func (e *env) waitRounds(t *testing.T, n int) {
	t.Helper()
	e.d.mu.Lock()
	target := e.d.rounds + n
	e.d.mu.Unlock()
	waitFor(t, "allocator rounds", func() bool {
		e.d.mu.Lock()
		defer e.d.mu.Unlock()
		return e.d.rounds >= target
	})
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %s\nwant %s", what, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

var modes = []Mode{Spark35, Spark40}

func TestStartSequence(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			e := started(t, mode)
			equal(t, "start calls", e.calls(0), []string{
				"GET /api/v1/namespaces/ns/pods/driver",
				"GET /api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Ddriver",
				"WS GET /api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Ddriver&resourceVersion=" + e.driver.ResourceVersion +
					"&timeoutSeconds=600&allowWatchBookmarks=true&watch=true",
				"WS GET /api/v1/namespaces/ns/pods?labelSelector=" + appSel + "&allowWatchBookmarks=true&watch=true",
				"POST /api/v1/namespaces/ns/configmaps",
			})
			reqs := e.api.Requests()
			post := reqs[len(reqs)-1]
			wantType := map[Mode]string{Spark35: "application/json; charset=utf-8", Spark40: "application/json"}[mode]
			if got := post.Header.Get("Content-Type"); got != wantType {
				t.Errorf("ConfigMap POST Content-Type %q, want %q", got, wantType)
			}
			var cm corev1.ConfigMap
			if err := json.Unmarshal(post.Body, &cm); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(cm.Name, "spark-exec-") || !strings.HasSuffix(cm.Name, "-conf-map") || cm.Name != e.d.ConfigMapName() {
				t.Errorf("ConfigMap name %q", cm.Name)
			}
			if cm.Immutable == nil || !*cm.Immutable {
				t.Error("ConfigMap not immutable")
			}
			if cm.Labels["spark-app-selector"] != appID || cm.Labels["spark-role"] != "executor" {
				t.Errorf("ConfigMap labels %v", cm.Labels)
			}
			checkOwner(t, "ConfigMap", cm.OwnerReferences, e.driver)
			for _, r := range reqs {
				if r.Header.Get("Authorization") != "Bearer t" || r.Header.Get("User-Agent") != "fabric8-kubernetes-client/"+mode.fabric8() {
					t.Errorf("%s: Authorization %q User-Agent %q", r, r.Header.Get("Authorization"), r.Header.Get("User-Agent"))
				}
			}
		})
	}
}

func checkOwner(t *testing.T, what string, refs []metav1.OwnerReference, driver *corev1.Pod) {
	t.Helper()
	if len(refs) != 1 || refs[0].APIVersion != "v1" || refs[0].Kind != "Pod" || refs[0].Name != "driver" ||
		refs[0].UID != driver.UID || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("%s owner references %+v, want the driver pod (uid %s) as controller", what, refs, driver.UID)
	}
}

func TestWebSocketUpgradeHeaders(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			e := started(t, mode)
			n := 0
			for _, r := range e.api.Requests() {
				if !r.WebSocket {
					continue
				}
				n++
				h := r.Header
				if got := h.Get("Origin"); got != e.srv.URL {
					t.Errorf("Origin %q, want %q", got, e.srv.URL)
				}
				if _, ok := h["Sec-Websocket-Protocol"]; ok {
					t.Errorf("Sec-WebSocket-Protocol sent: %q", h.Get("Sec-WebSocket-Protocol"))
				}
				if h.Get("Sec-WebSocket-Version") != "13" || !strings.EqualFold(h.Get("Connection"), "Upgrade") {
					t.Errorf("upgrade headers %v", h)
				}
				if h.Get("Authorization") != "Bearer t" || h.Get("User-Agent") != "fabric8-kubernetes-client/"+mode.fabric8() {
					t.Errorf("Authorization %q User-Agent %q", h.Get("Authorization"), h.Get("User-Agent"))
				}
			}
			if n != 2 {
				t.Errorf("%d WebSocket upgrades, want 2 (driver informer, executor watch)", n)
			}
		})
	}
}

func TestDriverPodMissingIsFatal(t *testing.T) {
	e := setup(t, Spark40, func(c *Config, _ *fakeapi.API) { c.DriverPodName = "missing" })
	err := e.d.Start(e.ctx)
	if err == nil || !strings.Contains(err.Error(), "No pod was found named missing in the cluster in the namespace ns") {
		t.Fatalf("Start: %v", err)
	}
	equal(t, "calls", e.calls(0), []string{"GET /api/v1/namespaces/ns/pods/missing"})
}

func TestAllocationRounds(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			e := started(t, mode)
			from := len(e.api.Requests())
			e.scale(t, 12)
			e.waitRounds(t, 2)
			pvc := "GET /api/v1/namespaces/ns/persistentvolumeclaims?labelSelector=spark-app-selector%3Dspark-app1"
			post := "POST /api/v1/namespaces/ns/pods"
			var want []string
			batch := e.d.Config().BatchSize
			for left := 12; left > 0; left -= batch {
				want = append(want, pvc)
				for range min(left, batch) {
					want = append(want, post)
				}
			}
			equal(t, "allocation calls", e.calls(from), want)

			var names []string
			for _, r := range e.api.Requests()[from:] {
				if r.Method != http.MethodPost {
					continue
				}
				var p corev1.Pod
				if err := json.Unmarshal(r.Body, &p); err != nil {
					t.Fatal(err)
				}
				names = append(names, p.Name)
			}
			if names[0] != "app1-exec-1" || names[11] != "app1-exec-12" {
				t.Errorf("executor names %v", names)
			}
			if st := e.d.Stats(); st.Created != 12 || st.Running != 12 || len(st.Series) < 2 || st.Series[len(st.Series)-1].Running != 12 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestExecutorPodBody compares the POSTed pod with a golden file.
func TestExecutorPodBody(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			e := started(t, mode)
			e.scale(t, 1)
			var body []byte
			for _, r := range e.api.Requests() {
				if r.Method == http.MethodPost && r.Path == "/api/v1/namespaces/ns/pods" {
					body = r.Body
				}
			}
			var p corev1.Pod
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatal(err)
			}
			checkOwner(t, "executor pod", p.OwnerReferences, e.driver)
			// Per-run values are normalised before the comparison.
			p.OwnerReferences[0].UID = "DRIVER-UID"
			p.Spec.Volumes[1].ConfigMap.Name = "CONFIG-MAP"
			local := p.Spec.Containers[0].VolumeMounts[0].MountPath
			p.Spec.Containers[0].VolumeMounts[0].MountPath = "LOCAL-DIR"
			for i, v := range p.Spec.Containers[0].Env {
				if v.Value == local {
					p.Spec.Containers[0].Env[i].Value = "LOCAL-DIR"
				}
			}
			got, _ := json.MarshalIndent(&p, "", "  ")
			golden(t, "executor-pod-"+string(mode)+".json", got)
		})
	}
}

func TestAllocatorWaitsForUnseenPodsAndTimesThemOut(t *testing.T) {
	e := setup(t, Spark35, func(c *Config, _ *fakeapi.API) {
		c.EnableWatch, c.EnablePolling = false, false // nothing is ever seen
		c.ExecutorTimeout = 100 * time.Millisecond
	})
	e.start(t)
	from := len(e.api.Requests())
	e.d.SetTarget(2)
	waitFor(t, "the first batch", func() bool { return e.d.Stats().Created == 2 })
	defer func() {
		if t.Failed() {
			t.Logf("calls: %s", strings.Join(e.calls(from), "\n"))
		}
	}()
	// Executors 1 and 2 time out in one round or in two.
	del := "DELETE /api/v1/namespaces/ns/pods?labelSelector=" + appSel + "%2Cspark-exec-id%20in%20%281"
	first := func() int {
		return slices.IndexFunc(e.calls(from), func(c string) bool { return strings.HasPrefix(c, del) })
	}
	waitFor(t, "the timed-out delete", func() bool { return first() >= 0 })
	calls := e.calls(from)
	if c := calls[first()]; c != del+"%2C2%29" && c != del+"%29" {
		t.Errorf("timed-out delete %s", c)
	}
	at := first()
	// Until the timeout no second batch: one PVC LIST and two POSTs only.
	equal(t, "calls before the timeout", calls[:at], []string{
		"GET /api/v1/namespaces/ns/persistentvolumeclaims?labelSelector=spark-app-selector%3Dspark-app1",
		"POST /api/v1/namespaces/ns/pods", "POST /api/v1/namespaces/ns/pods",
	})
	waitFor(t, "a new batch after the timeout", func() bool { return e.d.Stats().Created == 4 })
}

func TestExcessPendingPodsDeleted(t *testing.T) {
	e := setup(t, Spark40, func(c *Config, a *fakeapi.API) {
		a.AutoRun = false
		c.IdleTimeout = time.Nanosecond
	})
	e.start(t)
	e.d.SetTarget(3)
	waitFor(t, "three pending pods seen", func() bool {
		e.d.mu.Lock()
		defer e.d.mu.Unlock()
		return len(e.d.snap) == 3 && len(e.d.newly) == 0
	})
	if err := e.api.SetPhase(ns, "app1-exec-1", corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
	if err := e.d.WaitRunning(e.ctx, 1); err != nil {
		t.Fatal(err)
	}
	from := len(e.api.Requests())
	e.d.SetTarget(1)
	want := "DELETE /api/v1/namespaces/ns/pods?fieldSelector=status.phase%3DPending&labelSelector=" + appSel + "%2Cspark-exec-id%20in%20%282%2C3%29"
	waitFor(t, "the downscale delete", func() bool { return slices.Contains(e.calls(from), want) })
	if n := len(e.api.Pods(ns, "spark-role=executor")); n != 1 {
		t.Errorf("%d executor pods left, want 1", n)
	}
}

func TestFinishedExecutorRemoved(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			e := started(t, mode)
			e.scale(t, 1)
			e.d.SetTarget(0) // no replacement
			e.waitRounds(t, 2)
			from := len(e.api.Requests())
			if err := e.api.SetPhase(ns, "app1-exec-1", corev1.PodFailed); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the delete", func() bool { return e.api.Pod(ns, "app1-exec-1") == nil })
			want := []string{"DELETE /api/v1/namespaces/ns/pods/app1-exec-1"}
			if mode == Spark40 {
				want = append([]string{"GET /api/v1/namespaces/ns/pods/app1-exec-1"}, want...)
			}
			equal(t, "lifecycle calls", e.calls(from), want)
		})
	}
}

func TestKillExecutors(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			e := started(t, mode)
			e.scale(t, 3)
			e.waitRounds(t, 2)
			from := len(e.api.Requests())
			if err := e.d.KillExecutors(e.ctx, []int{2, 1}); err != nil {
				t.Fatal(err)
			}
			q := "/api/v1/namespaces/ns/pods?fieldSelector=status.phase%3DRunning&labelSelector=" + appSel + "%2Cspark-exec-id%20in%20%281%2C2%29"
			equal(t, "kill calls", e.calls(from), []string{"GET " + q, "GET " + q, "DELETE " + q})
			last := e.api.Requests()[from+2]
			if string(last.Body) != string(deleteBody) {
				t.Errorf("DELETE body %s", last.Body)
			}
			waitFor(t, "one executor", func() bool { return e.d.Running() == 1 })
			e.waitRounds(t, 3)
			if n := len(e.api.Pods(ns, "spark-role=executor")); n != 1 || e.d.Stats().Created != 3 {
				t.Errorf("%d executor pods, %d created; the lowered target must not be refilled", n, e.d.Stats().Created)
			}
		})
	}
}

func TestDecommissionPatch(t *testing.T) {
	e := started(t, Spark40)
	e.scale(t, 2)
	rv := e.api.Pod(ns, "app1-exec-2").ResourceVersion
	from := len(e.api.Requests())
	if err := e.d.Decommission(e.ctx, []int{2}, "spark-exec-decom", "true"); err != nil {
		t.Fatal(err)
	}
	equal(t, "decommission calls", e.calls(from), []string{
		"GET /api/v1/namespaces/ns/pods?labelSelector=" + appSel + "%2Cspark-exec-id%20in%20%282%29",
		"PATCH /api/v1/namespaces/ns/pods/app1-exec-2",
	})
	patch := e.api.Requests()[from+1]
	if ct := patch.Header.Get("Content-Type"); ct != "application/json-patch+json" {
		t.Errorf("Content-Type %q", ct)
	}
	want := `[{"op":"add","path":"/metadata/labels/spark-exec-decom","value":"true"},{"op":"add","path":"/metadata/resourceVersion","value":"` + rv + `"}]`
	if string(patch.Body) != want {
		t.Errorf("patch body\n got %s\nwant %s", patch.Body, want)
	}
	if p := e.api.Pod(ns, "app1-exec-2"); p.Labels["spark-exec-decom"] != "true" {
		t.Errorf("label not applied: %v", p.Labels)
	}
}

func TestStop(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			e := started(t, mode)
			e.scale(t, 2)
			from := len(e.api.Requests())
			if err := e.d.Stop(e.ctx); err != nil {
				t.Fatal(err)
			}
			equal(t, "stop calls", e.calls(from), []string{
				"DELETE /api/v1/namespaces/ns/services?labelSelector=spark-app-selector%3Dspark-app1",
				"DELETE /api/v1/namespaces/ns/persistentvolumeclaims?labelSelector=spark-app-selector%3Dspark-app1",
				"DELETE /api/v1/namespaces/ns/pods?labelSelector=" + appSel,
				"DELETE /api/v1/namespaces/ns/configmaps?labelSelector=" + appSel,
			})
			for _, r := range e.api.Requests()[from:] {
				if string(r.Body) != `{"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Background"}` {
					t.Errorf("%s body %s", r, r.Body)
				}
			}
			if n, c := len(e.api.Pods(ns, "spark-role=executor")), e.api.Count("configmaps", ns); n != 0 || c != 0 {
				t.Errorf("%d executors and %d ConfigMaps left", n, c)
			}
			if w := e.api.OpenWatches(); w != 0 {
				waitFor(t, "the watch to close", func() bool { return e.api.OpenWatches() == 0 })
			}
		})
	}
}

func TestWatchFallsBackToHTTPOn200And503(t *testing.T) {
	for _, code := range []int{http.StatusOK, http.StatusServiceUnavailable} {
		for _, mode := range modes {
			t.Run(fmt.Sprintf("%s/%d", mode, code), func(t *testing.T) {
				e := setup(t, mode, func(_ *Config, a *fakeapi.API) { a.SetUpgradeStatus(code) })
				e.start(t)
				var execWatch []string
				for _, c := range e.calls(0) {
					if strings.Contains(c, "labelSelector="+appSel+"&allowWatchBookmarks") {
						execWatch = append(execWatch, c)
					}
				}
				ws := "WS GET /api/v1/namespaces/ns/pods?labelSelector=" + appSel + "&allowWatchBookmarks=true&watch=true"
				want := []string{ws}
				if code == http.StatusServiceUnavailable {
					want = []string{ws, ws, ws, ws} // the request retries come first
				}
				want = append(want, strings.TrimPrefix(ws, "WS "))
				equal(t, "executor watch calls", execWatch, want)
				e.scale(t, 2)
				// The driver informer and the executor watch each fall back
				// once; the informer's watch starts on its own goroutine, so
				// wait for it rather than read the count at once.
				waitFor(t, "both watches to fall back to HTTP", func() bool { return e.d.Stats().HTTPFallback >= 2 })
				if st := e.d.Stats(); st.HTTPFallback != 2 {
					t.Errorf("HTTPFallback %d, want 2", st.HTTPFallback)
				}
			})
		}
	}
}

func TestWatchRefusedWith403IsFatal(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			e := setup(t, mode, func(_ *Config, a *fakeapi.API) { a.SetUpgradeStatus(http.StatusForbidden) })
			err := e.d.Start(e.ctx)
			if err == nil || !strings.Contains(err.Error(), "HTTP 403") {
				t.Fatalf("Start: %v, want the 403", err)
			}
			for _, c := range e.calls(0) {
				if strings.Contains(c, "watch=true") && !strings.HasPrefix(c, "WS ") {
					t.Errorf("HTTP watch tried after a 403: %s", c)
				}
			}
			if e.d.Stats().HTTPFallback != 0 {
				t.Error("fell back to HTTP after a 403")
			}
		})
	}
}

func TestWatchGoneEndsTheWatchForGood(t *testing.T) {
	e := setup(t, Spark35, func(c *Config, _ *fakeapi.API) { c.PollInterval = 10 * time.Millisecond })
	e.start(t)
	waitFor(t, "the executor watch", func() bool { return e.api.OpenWatches() == 1 })
	if n := e.api.WatchError(http.StatusGone); n != 1 {
		t.Fatalf("ERROR sent to %d watches", n)
	}
	waitFor(t, "the watch to end", func() bool { return e.d.Stats().WatchEnded })
	e.d.SetTarget(2)
	// Polling alone brings the executors in.
	if err := e.d.WaitRunning(e.ctx, 2); err != nil {
		t.Fatal(err)
	}
	st := e.d.Stats()
	if st.Gone410 != 1 || st.WatchReconnects != 0 || e.api.OpenWatches() != 0 {
		t.Errorf("410: %d, reconnects %d, open watches %d; want 1, 0, 0", st.Gone410, st.WatchReconnects, e.api.OpenWatches())
	}
	if st.Requests["list pods"] < 2 {
		t.Errorf("polling LISTs: %d", st.Requests["list pods"])
	}
	for _, c := range e.calls(0) {
		if strings.Contains(c, "spark-exec-inactive") {
			want := "GET /api/v1/namespaces/ns/pods?labelSelector=" + appSel + "%2Cspark-exec-inactive%21%3Dtrue"
			if c != want {
				t.Errorf("polling LIST\n got %s\nwant %s", c, want)
			}
			break
		}
	}
}

// TestWatchReconnectsFromLastResourceVersion: any other ERROR, or a closed
// connection, reconnects after fabric8's first backoff (1 s) with the last
// resourceVersion seen.
func TestWatchReconnectsFromLastResourceVersion(t *testing.T) {
	e := started(t, Spark40)
	e.scale(t, 1)
	rv := e.api.Pod(ns, "app1-exec-1").ResourceVersion
	from := len(e.api.Requests())
	e.api.WatchError(http.StatusInternalServerError)
	waitFor(t, "the reconnect", func() bool { return e.d.Stats().WatchReconnects == 1 && e.api.OpenWatches() == 1 })
	calls := e.calls(from)
	want := "WS GET /api/v1/namespaces/ns/pods?labelSelector=" + appSel + "&resourceVersion=" + rv + "&allowWatchBookmarks=true&watch=true"
	if !slices.Contains(calls, want) {
		t.Errorf("reconnect calls %v, want %s", calls, want)
	}
}

func TestPostRetriedOn500(t *testing.T) {
	e := setup(t, Spark35, func(_ *Config, a *fakeapi.API) {
		a.AddFault(fakeapi.Fault{Method: http.MethodPost, Path: "/configmaps", Code: 500, Times: 2})
	})
	e.start(t)
	n := 0
	for _, c := range e.calls(0) {
		if c == "POST /api/v1/namespaces/ns/configmaps" {
			n++
		}
	}
	if n != 3 || e.d.Stats().Retries != 2 || e.api.Count("configmaps", ns) != 1 {
		t.Errorf("%d POSTs, %d retries, %d ConfigMaps; want 3, 2, 1", n, e.d.Stats().Retries, e.api.Count("configmaps", ns))
	}
}

// TestCreateFailureAbandonsTheBatch: after 4 answers of 500 the create
// fails, the rest of the batch is dropped, the id stays used and the next
// round tries again.
func TestCreateFailureAbandonsTheBatch(t *testing.T) {
	e := setup(t, Spark35, func(_ *Config, a *fakeapi.API) {
		a.AddFault(fakeapi.Fault{Method: http.MethodPost, Path: "/pods", Code: 500, Times: 4, RetryAfter: "0"})
	})
	e.start(t)
	e.scale(t, 2)
	st := e.d.Stats()
	if st.CreateErrors != 1 || st.Requests["create pods"] != 6 || !strings.Contains(st.LastCreateError, "HTTP 500") {
		t.Errorf("stats %+v", st)
	}
	if e.api.Pod(ns, "app1-exec-1") != nil || e.api.Pod(ns, "app1-exec-3") == nil {
		t.Error("executor 1's id must stay used and executors 2 and 3 be created")
	}
}

// TestCreateErrorsKeepTheFirstAndTheLast: a create refused 500 (after the
// retries) and then 403 (not retried) leaves both messages in the stats.
func TestCreateErrorsKeepTheFirstAndTheLast(t *testing.T) {
	e := setup(t, Spark40, func(_ *Config, a *fakeapi.API) {
		a.AddFault(fakeapi.Fault{Method: http.MethodPost, Path: "/pods", Code: 500, Times: 4, RetryAfter: "0"})
		a.AddFault(fakeapi.Fault{Method: http.MethodPost, Path: "/pods", Code: 403, Times: 1})
	})
	e.start(t)
	e.scale(t, 1)
	st := e.d.Stats()
	if st.CreateErrors != 2 || !strings.Contains(st.FirstCreateError, "HTTP 500") || !strings.Contains(st.LastCreateError, "HTTP 403") {
		t.Errorf("want 2 errors, the first a 500 and the last a 403: %+v", st)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	_, err := New(Config{Server: "127.0.0.1:1", Mode: "2.4"})
	for _, field := range []string{"Server", "Namespace", "AppID", "DriverPodName", "ExecutorImage", "Mode"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("error %v does not name %s", err, field)
		}
	}
}

func TestSelectorEncoding(t *testing.T) {
	sel := selector{}.with(labelApp, "spark-abc").with(labelRole, roleExecutor).without(labelInactive, "true").withIn(labelExecID, ids([]int{10, 2})...)
	got := listOpts{field: "status.phase=Running", label: sel.String()}.String()
	want := "fieldSelector=status.phase%3DRunning&labelSelector=spark-app-selector%3Dspark-abc%2Cspark-role%3Dexecutor%2Cspark-exec-inactive%21%3Dtrue%2Cspark-exec-id%20in%20%282%2C10%29"
	if got != want {
		t.Errorf("query\n got %s\nwant %s", got, want)
	}
}

var update = os.Getenv("UPDATE_GOLDEN") == "1"

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
	}
	if strings.TrimSpace(string(want)) != strings.TrimSpace(string(got)) {
		t.Errorf("%s differs from the golden file:\n%s", name, got)
	}
}
