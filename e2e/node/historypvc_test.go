package node

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/internal/eventlogs"
	"github.com/sparklet/sparklet/vocab"
)

// historyOnClaim ships a stock SparkPi 4.3.0 driver's event log to a claim
// and reads it with the chart's history server, on the real node. One host
// directory stands for an NFS export seen from two namespaces: a hostPath
// PersistentVolume pre-bound to the claim the namespace's policy names
// (history.pvc), and a second one on the same directory bound to the claim
// the history server reads in the release namespace. The complete log (no
// .inprogress, SparkListenerApplicationEnd in the last event file) is in
// the directory when the driver pod has ended, written by the sidecar's
// user, and the server lists the application as completed.
func historyOnClaim(ctx context.Context, t *testing.T, release, releaseNS string) {
	ctx, cancel := context.WithTimeout(ctx, 8*time.Minute)
	defer cancel()
	start := time.Now()
	ns := optedInNamespace(ctx, t, release, "spark-pvc")
	// The sidecar (uid 65532) writes there; the kubelet gives a hostPath
	// volume no fsGroup.
	host := filepath.Join(filepath.Dir(nd.Dir()), "history-pvc")
	if err := os.RemoveAll(host); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(host, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(host, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	hostPathClaim(ctx, t, host, ns, "spark-history")
	hostPathClaim(ctx, t, host, releaseNS, "history-read")

	// One upgrade: the namespace's policy ships to its claim, and the
	// server reads the other claim under the same prefix (the policy's
	// cluster section, which it defaults from, names no claim here).
	upgrade := time.Now()
	upgradeValues(ctx, t, release, releaseNS, func(v map[string]any) {
		child(child(child(v, "policy"), "namespaces"), ns)["history"] = map[string]any{"pvc": map[string]any{"claimName": "spark-history", "prefix": "events"}}
		child(v, "history")["server"] = map[string]any{"enabled": true, "pvc": map[string]any{"claimName": "history-read", "prefix": "events"},
			"resources": map[string]any{"requests": map[string]any{"cpu": "10m", "memory": "256Mi"}, "limits": map[string]any{"memory": "768Mi"}}}
	})
	t.Cleanup(func() {
		upgradeValues(context.Background(), t, release, releaseNS, func(v map[string]any) {
			child(v, "history")["server"] = map[string]any{"enabled": false}
		})
	})
	webhookRolledOut(ctx, t, release, releaseNS)
	t.Logf("helm upgrade of %s's policy and the history server to its webhook pods alone answering: %s", ns, time.Since(upgrade).Round(100*time.Millisecond))

	const name = "spark-pi-pvc"
	pod := "apiVersion: v1\nkind: Pod\n" + strings.Replace(sparkPiTemplate("4.3.0", "2.13", 1), "metadata:\n", "metadata:\n  name: "+name+"\n", 1)
	kubectl(ctx, t, "-n", ns, "apply", "-f", "-", withStdin(pod))
	done := waitPodPhase(ctx, t, ns, name, corev1.PodSucceeded)
	appID := done.Labels[vocab.LabelAppID]

	// Everything is there once the pod has ended: the sidecar ends after
	// it has shipped.
	dir := filepath.Join(host, "events", "eventlog_v2_"+appID)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("the claim's directory once the driver ended: %v", err)
	}
	var names, events []string
	for _, e := range entries {
		names = append(names, e.Name())
		if strings.HasPrefix(e.Name(), "events_") {
			events = append(events, e.Name())
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if st := info.Sys().(*syscall.Stat_t); st.Uid != 65532 || info.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, owner %d; want 0644, written by the sidecar (65532)", e.Name(), info.Mode(), st.Uid)
		}
	}
	if !slices.Contains(names, "appstatus_"+appID) || len(events) == 0 || slices.ContainsFunc(names, func(n string) bool {
		return strings.HasSuffix(n, ".inprogress") || strings.HasPrefix(n, ".")
	}) {
		t.Fatalf("the claim holds %q, want the complete app status, the event files, nothing in progress or hidden", names)
	}
	slices.SortFunc(events, func(a, b string) int { return cmp.Compare(eventlogs.EventIndex(a), eventlogs.EventIndex(b)) })
	last, err := os.ReadFile(filepath.Join(dir, events[len(events)-1]))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(last, []byte(`"Event":"SparkListenerApplicationEnd"`)) {
		t.Errorf("the last event file %s has no SparkListenerApplicationEnd: the log is not complete", events[len(events)-1])
	}
	shipped := podEvent(ctx, t, ns, name, "EventLogShipped")
	t.Logf("complete event log on the claim (%q) when the pod ended: %s", names, shipped.Message)

	// The history server reads the other claim on the same directory.
	deploy := release + "-sparklet-history"
	kubectl(ctx, t, "-n", releaseNS, "rollout", "status", "deploy/"+deploy, "--timeout=4m")
	addr, forwarder := portForward(ctx, t, releaseNS, "svc/"+deploy, 18080)
	listed := time.Now()
	var body string
	for {
		body, err = getRetrying(ctx, "http://"+addr+"/api/v1/applications", time.Minute)
		if err == nil && completedApp(body, appID) {
			break
		}
		if time.Since(listed) > 2*time.Minute || ctx.Err() != nil {
			t.Fatalf("the history server never listed %s as completed: %v %s\nkubectl port-forward:\n%s\nhistory server:\n%s",
				appID, err, body, forwarder, historyServerLog(ctx, t, release, releaseNS))
		}
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
	t.Logf("the history server on the claim listed %s as completed %v after its rollout; the subtest took %s",
		appID, time.Since(listed).Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
}

// historyServerLog is the tail of the history server's log.
func historyServerLog(ctx context.Context, t *testing.T, release, releaseNS string) string {
	pods, err := cp.Client().CoreV1().Pods(releaseNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=history-server"})
	if err != nil || len(pods.Items) == 0 {
		return fmt.Sprintf("no pod: %v", err)
	}
	return tail(podLogs(ctx, t, releaseNS, pods.Items[0].Name, "history-server"), 30)
}

// upgradeValues runs helm upgrade with the release's values as edit
// leaves them (helm get values, then --reset-values): a value can go,
// which `--reuse-values --set key=null` leaves behind as a null the
// chart's schema refuses at the next upgrade.
func upgradeValues(ctx context.Context, t *testing.T, release, releaseNS string, edit func(map[string]any)) {
	t.Helper()
	out := helm(ctx, t, "get", "values", release, "--namespace", releaseNS, "-o", "json")
	values := map[string]any{}
	if i := strings.IndexByte(out, '{'); i >= 0 { // after any warning helm printed
		dec := json.NewDecoder(strings.NewReader(out[i:]))
		dec.UseNumber() // integers stay as written
		if err := dec.Decode(&values); err != nil {
			t.Fatalf("helm get values: %v\n%s", err, out)
		}
	}
	edit(values)
	data, err := json.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "values.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	helm(ctx, t, "upgrade", release, chartDir(t), "--namespace", releaseNS, "--reset-values", "-f", file)
}

// child is m[key] as a map, made when missing.
func child(m map[string]any, key string) map[string]any {
	c, ok := m[key].(map[string]any)
	if !ok {
		c = map[string]any{}
		m[key] = c
	}
	return c
}

// completedApp tells whether the history server's application list (the
// JSON of /api/v1/applications) has appID, completed.
func completedApp(list, appID string) bool {
	var apps []struct {
		ID       string `json:"id"`
		Attempts []struct {
			Completed bool `json:"completed"`
		} `json:"attempts"`
	}
	if json.Unmarshal([]byte(list), &apps) != nil {
		return false
	}
	for _, a := range apps {
		if a.ID == appID && len(a.Attempts) > 0 && a.Attempts[0].Completed {
			return true
		}
	}
	return false
}

// hostPathClaim makes a claim in ns pre-bound to a hostPath
// PersistentVolume of dir, both removed when t ends.
func hostPathClaim(ctx context.Context, t *testing.T, dir, ns, claim string) {
	t.Helper()
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	rwx := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	pvName := ns + "-" + claim
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity: size, AccessModes: rwx, PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}},
			ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: claim},
		},
	}
	if _, err := cp.Client().CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Client().CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	noClass := ""
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: rwx, StorageClassName: &noClass, VolumeName: pvName,
			Resources: corev1.VolumeResourceRequirements{Requests: size}},
	}
	if _, err := cp.Client().CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Client().CoreV1().PersistentVolumeClaims(ns).Delete(context.Background(), claim, metav1.DeleteOptions{})
	})
}
