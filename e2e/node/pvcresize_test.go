package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/test/executors"
	"github.com/sparklet/sparklet/test/fileserver"
	"github.com/sparklet/sparklet/test/node"
	"github.com/sparklet/sparklet/test/sleepyjob"
	"github.com/sparklet/sparklet/vocab"
)

// Spark 4.3.0's ExecutorPVCResizePlugin (apache/spark
// resource-managers/kubernetes/core/.../k8s/ExecutorPVCResizePlugin.scala
// and Config.scala, as in the 4.3.0 jar): every resizeInterval minutes
// (timeConf in minutes, 0 or a positive multiple of 5, so 5 at the
// soonest) each executor reports (total - usable) / total of the file
// systems of its local dirs (java.io.File's getTotalSpace and
// getUsableSpace), the largest; every interval from its own start the
// driver takes the latest reports, and for one above resizeThreshold
// GETs each spark-local-dir-* PVC of that executor's pod and PATCHes its
// storage request to request × (1 + resizeFactor), in bytes. A failed
// GET or PATCH is logged and that PVC never tried again. The driver's
// plugin starts before any executor, so the first report reaches it
// after its first round: the resize comes with its second, ten minutes
// after the SparkContext started.
const (
	pvcResizeInterval  = 5 * time.Minute
	pvcResizeThreshold = 0.5
	pvcResizeFactor    = 0.1
	pvcMaxSize         = "1500Mi"
	// The executor's local dirs are PVs on one tmpfs the test mounts, so
	// that how full they are is what the job writes: 24 of 32 MiB.
	pvcTmpfsMiB = 32
	pvcFillMiB  = 24
)

// pvcVolume is one of the executor's on-demand PVCs (Spark's
// spark.kubernetes.executor.volumes.persistentVolumeClaim.<name>.*) and
// the PV made for it.
type pvcVolume struct {
	name, size string
	expandable bool
	// grown is the request Spark asks for; over the policy's maximum
	// or of a class without expansion, the sidecar refuses it.
	grown   int64
	refusal string
}

var pvcVolumes = []pvcVolume{
	{name: "spark-local-dir-1", size: "1Gi", expandable: true, grown: 1181116006}, // 1Gi × 1.1
	{name: "spark-local-dir-2", size: "1400Mi", expandable: true, grown: 1614807040,
		refusal: "over the policy limit limits.executor.maxPVCSize=" + pvcMaxSize},
	{name: "spark-local-dir-3", size: "1Gi", grown: 1181116006, refusal: "does not set allowVolumeExpansion: true"},
}

// pvcClass is the StorageClass of v's PVC and PV in ns.
func (v pvcVolume) class(ns string) string {
	if v.expandable {
		return ns + "-expandable"
	}
	return ns + "-fixed"
}

// pvcResizeRun is the PVC resize's driver, started by one subtest of
// TestHelmInstall and checked by a later one, so that the ten minutes
// Spark takes pass while other subtests run.
type pvcResizeRun struct {
	ns, name, appID string
	tmpfs           string
	started         time.Time
	letGo           func()
}

// laterT is a subtest's t whose Cleanup functions run when later ends: what
// one subtest starts for a later one to check.
type laterT struct {
	*testing.T
	later *testing.T
}

func (l laterT) Cleanup(f func()) { l.later.Cleanup(f) }

// startPVCResize runs a stock PySpark 4.3.0 driver with the PVC resize
// plugin through the chart, in a namespace of its own whose policy
// section (helm upgrade --reuse-values) sets limits.executor.maxPVCSize.
// Its one executor mounts three on-demand PVCs as its local dirs,
// statically provisioned (StorageClasses kubernetes.io/no-provisioner,
// WaitForFirstConsumer): hostPath PVs, directories of a tmpfs the test
// mounts on the node. The job writes pvcFillMiB into them and holds.
func startPVCResize(ctx context.Context, t testing.TB, release, releaseNS string) *pvcResizeRun {
	ns := optedInNamespace(ctx, t, release, "spark-pvc")
	// The chart grants reading StorageClasses to the listed namespaces'
	// drivers; for a labelled one the platform team binds it by hand.
	kubectl(ctx, t, "create", "clusterrolebinding", ns+"-storageclasses",
		"--clusterrole="+release+"-sparklet-driver-storageclasses", "--serviceaccount="+ns+":spark-driver")
	t.Cleanup(func() {
		_ = cp.Client().RbacV1().ClusterRoleBindings().Delete(context.Background(), ns+"-storageclasses", metav1.DeleteOptions{})
	})
	setNamespacePolicy(ctx, t, release, releaseNS, ns, "\n      limits:\n        executor: {maxPVCSize: "+pvcMaxSize+"}")

	tmpfs := pvcTmpfs(t, ns)
	staticPVs(ctx, t, ns, tmpfs)

	files, err := fileserver.Start(node.HostIP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(files.Close)
	gate, letGo := files.Gate("pvc-resize/release")
	script, err := os.ReadFile("testdata/pvcresize.py")
	if err != nil {
		t.Fatal(err)
	}
	conf := "spark.executor.instances 1\nspark.executor.memory 512m\nspark.driver.memory 512m\n" + smallExecutors +
		"spark.plugins org.apache.spark.scheduler.cluster.k8s.ExecutorPVCResizePlugin\n" +
		fmt.Sprintf("spark.kubernetes.executor.pvc.resizeInterval %dmin\n", int(pvcResizeInterval.Minutes())) +
		fmt.Sprintf("spark.kubernetes.executor.pvc.resizeThreshold %v\n", pvcResizeThreshold) +
		fmt.Sprintf("spark.kubernetes.executor.pvc.resizeFactor %v\n", pvcResizeFactor)
	for _, v := range pvcVolumes {
		key := "spark.kubernetes.executor.volumes.persistentVolumeClaim." + v.name
		conf += key + ".options.claimName OnDemand\n" + key + ".options.storageClass " + v.class(ns) + "\n" +
			key + ".options.sizeLimit " + v.size + "\n" + key + ".mount.path /data/" + v.name + "\n" + key + ".mount.readOnly false\n"
	}
	job := sleepyjob.Job{Script: "pvcresize.py", ScriptText: string(script), Conf: conf,
		Files: map[string]string{"gate": gate, "fill": strconv.Itoa(pvcFillMiB)}}
	const name = "pvc-resize"
	cm, err := cp.Client().CoreV1().ConfigMaps(ns).Create(ctx, job.ConfigMap(name), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := cp.Client().CoreV1().Pods(ns).Create(ctx, job.DriverPod(name, "4.3.0", cm.Name, corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
	}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Labels[vocab.LabelAppID] == "" {
		t.Fatalf("driver %s admitted without the %s label: not injected", name, vocab.LabelAppID)
	}
	return &pvcResizeRun{ns: ns, name: name, appID: pod.Labels[vocab.LabelAppID], tmpfs: tmpfs, started: time.Now(), letGo: letGo}
}

// pvcTmpfs mounts a pvcTmpfsMiB tmpfs in the node's directory (where the
// node's Stop unmounts what a killed run left) with one directory per
// volume, writable by the Spark image's user, and checks it is emptier
// than the threshold.
func pvcTmpfs(t testing.TB, ns string) string {
	dir := filepath.Join(nd.Dir(), ns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%dm,mode=0755", pvcTmpfsMiB)); err != nil {
		t.Fatalf("mount a tmpfs at %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	for _, v := range pvcVolumes {
		if err := os.Mkdir(filepath.Join(dir, v.name), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, v.name), 0o777); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	if r := usedRatio(t, dir); r >= pvcResizeThreshold {
		t.Fatalf("the new tmpfs at %s is %.3f full, want under %v", dir, r, pvcResizeThreshold)
	}
	return dir
}

// usedRatio is how full the file system at dir is, as the plugin's
// executors measure it: (total - usable) / total.
func usedRatio(t testing.TB, dir string) float64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return float64(st.Blocks-st.Bavail) / float64(st.Blocks)
}

// staticPVs makes the volumes' StorageClasses (no provisioner, binding
// when the executor is scheduled, the one expanding and the other not)
// and one hostPath PV per volume, of its class and size, in the tmpfs.
// The PV binder and the scheduler bind each PVC Spark makes to its PV.
func staticPVs(ctx context.Context, t testing.TB, ns, tmpfs string) {
	classes := cp.Client().StorageV1().StorageClasses()
	for _, expands := range []bool{true, false} {
		name := pvcVolume{expandable: expands}.class(ns)
		if _, err := classes.Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name},
			Provisioner: "kubernetes.io/no-provisioner", AllowVolumeExpansion: ptr.To(expands),
			VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = classes.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	pvs := cp.Client().CoreV1().PersistentVolumes()
	for _, v := range pvcVolumes {
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + v.name}, Spec: corev1.PersistentVolumeSpec{
			Capacity:         corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(v.size)},
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}, // Spark's on-demand PVCs' (4.x)
			StorageClassName: v.class(ns),
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: filepath.Join(tmpfs, v.name), Type: ptr.To(corev1.HostPathDirectory)}},
		}}
		if _, err := pvs.Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pvs.Delete(context.Background(), pv.Name, metav1.DeleteOptions{}) })
	}
}

// pvcResized checks what the PVC resize's driver did: its executor's
// three PVCs bound to the test's PVs; once the executor reported its local
// dirs over the threshold, the sidecar grew the first PVC's request to
// request × (1 + factor) (a PVCResized Event) and refused the second, over
// the policy's maximum, and the third, of a class without expansion
// (PVCResizeRefused Events, and the driver's log saying it will not try
// them again); then the application ends and its PVCs are deleted.
func pvcResized(ctx context.Context, t *testing.T, r *pvcResizeRun) {
	start := time.Now()
	client := cp.Client()
	tracked := executors.Track(t, client, r.ns, vocab.LabelAppID+"="+r.appID)
	var exec *corev1.Pod
	waitUntil(ctx, t, r, "ran its executor", 5*time.Minute, func(context.Context) bool {
		var ok bool
		exec, ok = tracked.RunningExecutor()
		return ok
	})
	claims := map[string]string{}
	for _, v := range exec.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims[v.Name] = v.PersistentVolumeClaim.ClaimName
		}
	}
	pvcs := client.CoreV1().PersistentVolumeClaims(r.ns)
	for _, v := range pvcVolumes {
		pvc, err := pvcs.Get(ctx, claims[v.name], metav1.GetOptions{})
		if err != nil {
			t.Fatalf("executor %s's volume %s: claim %q: %v", exec.Name, v.name, claims[v.name], err)
		}
		if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName != r.ns+"-"+v.name {
			t.Fatalf("PVC %s is %s on PV %q, want Bound to %s-%s", pvc.Name, pvc.Status.Phase, pvc.Spec.VolumeName, r.ns, v.name)
		}
	}

	// Two plugin rounds from the driver's start, and the executor's.
	grow := claims[pvcVolumes[0].name]
	var resizedSeen time.Time
	waitUntil(ctx, t, r, "grew PVC "+grow, time.Until(r.started.Add(3*pvcResizeInterval+2*time.Minute)), func(ctx context.Context) bool {
		pvc, err := pvcs.Get(ctx, grow, metav1.GetOptions{})
		if err == nil && pvc.Spec.Resources.Requests.Storage().Value() == pvcVolumes[0].grown {
			resizedSeen = time.Now()
			return true
		}
		if log := logWithTimes(ctx, r.ns, r.name, "spark"); strings.Contains(log, "Failed to expand PVC "+grow) {
			t.Fatalf("the driver could not grow PVC %s:\n%s", grow, linesWith(log, "PVC"))
		}
		return false
	})

	resized := podEvent(ctx, t, r.ns, r.name, "PVCResized")
	if want := fmt.Sprintf("PVC %s asks for storage %d", grow, pvcVolumes[0].grown); !strings.Contains(resized.Message, want) {
		t.Errorf("PVCResized: %q, want %q", resized.Message, want)
	}
	var refused []string
	for _, v := range pvcVolumes[1:] {
		refused = append(refused, claims[v.name])
	}
	refusals := pvcRefusals(ctx, t, r, refused)
	driverLog := logWithTimes(ctx, r.ns, r.name, "spark")
	for _, v := range pvcVolumes {
		claim := claims[v.name]
		pvc, err := pvcs.Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		request := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		size := resource.MustParse(v.size)
		asked := fmt.Sprintf("Increase PVC %s storage from %d to %d as usage ratio exceeded threshold", claim, size.Value(), v.grown)
		if !strings.Contains(driverLog, asked) {
			t.Errorf("the driver's log does not say %q:\n%s", asked, linesWith(driverLog, "PVC"))
		}
		if v.refusal == "" {
			capacity := pvc.Status.Capacity[corev1.ResourceStorage]
			t.Logf("PVC %s (%s): request %s, capacity %s (no CSI resizer expands a hostPath PV)", claim, v.name, request.String(), capacity.String())
			continue
		}
		if request.Cmp(size) != 0 {
			t.Errorf("PVC %s asks for %s, want %s kept", claim, request.String(), v.size)
		}
		if msg := refusals[claim]; !strings.Contains(msg, v.refusal) {
			t.Errorf("PVC %s: PVCResizeRefused %q, want it to say %q", claim, msg, v.refusal)
		}
		if !strings.Contains(driverLog, "Failed to expand PVC "+claim+"; will skip subsequent attempts") {
			t.Errorf("the driver's log does not say it gave up PVC %s:\n%s", claim, linesWith(driverLog, "PVC"))
		}
		t.Logf("PVC %s (%s): refused, %s", claim, v.name, refusals[claim])
	}

	// The figures: the fill's time on the tmpfs, the executor's report,
	// the driver's PATCH.
	filled := fillTime(t, r.tmpfs)
	ratio := usedRatio(t, r.tmpfs)
	if ratio <= pvcResizeThreshold {
		t.Errorf("the tmpfs behind the PVs is %.3f full, want over %v", ratio, pvcResizeThreshold)
	}
	report := firstLineWith(logWithTimes(ctx, r.ns, exec.Name, exec.Spec.Containers[0].Name), "Reporting max PVC disk usage ratio")
	patched := firstLineWith(driverLog, "Increase PVC "+grow)
	t.Logf("driver created %s; job's %d MiB written (the tmpfs %.3f full) %s later; executor's first report %s later: %q; "+
		"driver's PATCH %s after the write (%q), the PVC seen grown %s after it; sidecar: %q",
		r.started.UTC().Format(time.RFC3339), pvcFillMiB, ratio, filled.Sub(r.started).Round(time.Second),
		logTime(t, report).Sub(filled).Round(time.Second), report,
		logTime(t, patched).Sub(filled).Round(time.Second), patched, resizedSeen.Sub(logTime(t, patched)).Round(100*time.Millisecond), resized.Message)

	r.letGo()
	waitUntil(ctx, t, r, "Succeeded", 3*time.Minute, func(ctx context.Context) bool {
		p, err := client.CoreV1().Pods(r.ns).Get(ctx, r.name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodSucceeded
	})
	executors.WaitClean(t, client, r.ns, r.appID, 2*time.Minute)
	t.Logf("PVC resize checked in %s (the driver created %s before this subtest began)", time.Since(start).Round(100*time.Millisecond),
		start.Sub(r.started).Round(time.Second))
}

// pvcRefusals waits for a PVCResizeRefused Event on the driver naming
// each of claims and returns their messages by claim.
func pvcRefusals(ctx context.Context, t *testing.T, r *pvcResizeRun, claims []string) map[string]string {
	t.Helper()
	byClaim := map[string]string{}
	waitUntil(ctx, t, r, fmt.Sprintf("had PVCResizeRefused Events for %v", claims), 30*time.Second, func(ctx context.Context) bool {
		l, err := cp.Client().CoreV1().Events(r.ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.name": r.name, "reason": "PVCResizeRefused"}.String()})
		if err != nil {
			return false
		}
		for _, e := range l.Items {
			for _, c := range claims {
				if strings.Contains(e.Message, strconv.Quote(c)) {
					byClaim[c] = e.Message
				}
			}
		}
		return len(byClaim) == len(claims)
	})
	return byClaim
}

// waitUntil polls cond until it holds, failing t after timeout with the
// driver's and sidecar's logs.
func waitUntil(ctx context.Context, t *testing.T, r *pvcResizeRun, what string, timeout time.Duration, cond func(context.Context) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, max(timeout, time.Second), true, func(ctx context.Context) (bool, error) {
		return cond(ctx), nil
	})
	if err != nil {
		t.Fatalf("%s never %s within %v: %v\n--- spark:\n%s\n--- sidecar:\n%s", r.name, what, timeout, err,
			tail(logWithTimes(ctx, r.ns, r.name, "spark"), 30), tail(logWithTimes(ctx, r.ns, r.name, patches.SidecarName), 30))
	}
}

// logWithTimes is a container's log with the kubelet's time before each
// line (kubectl logs --timestamps), or "" while it cannot be read.
func logWithTimes(ctx context.Context, ns, pod, container string) string {
	data, err := cp.Client().CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, Timestamps: true}).DoRaw(ctx)
	if err != nil {
		return ""
	}
	return string(data)
}

func linesWith(log, s string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func firstLineWith(log, s string) string {
	l, _, _ := strings.Cut(linesWith(log, s), "\n")
	return l
}

// logTime is the kubelet's time of a line of logWithTimes.
func logTime(t *testing.T, line string) time.Time {
	t.Helper()
	stamp, _, _ := strings.Cut(line, " ")
	at, err := time.Parse(time.RFC3339Nano, stamp)
	if err != nil {
		t.Fatalf("no time on log line %q: %v", line, err)
	}
	return at
}

// fillTime is when the job's file in the tmpfs was last written. PySpark
// gives its workers the block manager's directories as SPARK_LOCAL_DIRS,
// so the file is in one of those, under a volume's directory.
func fillTime(t *testing.T, tmpfs string) time.Time {
	t.Helper()
	found, _ := filepath.Glob(filepath.Join(tmpfs, "*", "blockmgr-*", "pvc-resize-fill"))
	if len(found) != 1 {
		t.Fatalf("the job's file in %s: %v, want one", tmpfs, found)
	}
	info, err := os.Stat(found[0])
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() != pvcFillMiB<<20 {
		t.Errorf("%s holds %d bytes, want %d", found[0], info.Size(), pvcFillMiB<<20)
	}
	return info.ModTime()
}
