package realspark

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/patches/sparkconf"
	"github.com/sparklet/sparklet/test/sparkimage"
	"github.com/sparklet/sparklet/vocab"
)

// usersKeptScript runs a DataFrame shuffle and prints what the driver JVM
// took from the pod: its application name, shuffle partitions, driver
// memory, heap, and the root of its SparkFiles, a directory SparkEnv makes
// under the first of its local dirs (Utils.getLocalDir).
const usersKeptScript = checkScript + `from pyspark import SparkFiles
from pyspark.sql import functions as F


def shuffle():
    counts = spark.range(0, 1000, 1, 4).groupBy((F.col("id") % 5).alias("k")).count()
    rows = counts.collect()
    return "%d partitions, %d keys, %d rows" % (counts.rdd.getNumPartitions(), len(rows), sum(r["count"] for r in rows))


check("app-name", lambda: sc.appName)
check("shuffle", shuffle)
check("driver-memory", lambda: sc.getConf().get("spark.driver.memory", ""))
check("max-heap-mib", lambda: sc._jvm.java.lang.Runtime.getRuntime().maxMemory() // (1024 * 1024))
check("files-root", SparkFiles.getRootDirectory)
check("env-local-dirs", lambda: os.environ.get("SPARK_LOCAL_DIRS", ""))
spark.stop()
`

// usersConf is the pod's sparklet.io/spark-conf: keys of the user's own
// the JVM must apply, one of which (spark.driver.memory) the image's
// spark-defaults.conf (768m) and the policy's defaults (512m) also set.
const usersConf = `spark.app.name sparklet-user-conf-kept
spark.sql.shuffle.partitions 7
spark.sql.adaptive.enabled false
spark.driver.memory 640m
spark.executor.instances 1
`

// createdLocalDir is DiskBlockManager's line for each local dir it makes,
// the same in Spark 3.5 and 4.x.
var createdLocalDir = regexp.MustCompile(`Created local directory at (\S+)`)

// TestUsersLocalDirsAndConfKept runs a PySpark driver whose pod mounts its
// own scratch volume at /scratch and names it as Spark's local dir, by
// SPARK_LOCAL_DIRS or by spark.local.dir, and whose sparklet.io/spark-conf
// sets keys of its own. The JVM must use /scratch (sparklet adds no
// emptyDir there and keeps the user's SPARK_LOCAL_DIRS), apply every key
// of the user's over the image's spark-defaults.conf and the policy's
// defaults, and run a shuffle with the user's partition count; the
// effective-conf annotation must not repeat the user's lines.
func TestUsersLocalDirsAndConfKept(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte(usersKeptScript))
	url := files.Serve("py/userskept.py", []byte(usersKeptScript))
	for _, route := range []struct{ name, env, conf string }{
		{"env", "    env: [{name: SPARK_LOCAL_DIRS, value: /scratch}]\n", ""},
		{"conf", "", "spark.local.dir /scratch\n"},
	} {
		for _, d := range dists {
			if d.Version != "3.5.9" && d.Version != "4.3.0" {
				continue
			}
			t.Run(route.name+"/"+d.Version, func(t *testing.T) {
				conf := usersConf + route.conf
				manifest := `apiVersion: v1
kind: Pod
metadata:
  name: userskept
  labels: {spark-role: driver}
  annotations:
    sparklet.io/spark-conf: |
` + indent(conf, "      ") + `    sparklet.io/fetch: |
      - url: ` + url + `
        sha256: "` + hex.EncodeToString(sum[:]) + `"
spec:
  restartPolicy: Never
  volumes:
  - {name: scratch, emptyDir: {}}
  containers:
  - name: spark
    image: ` + sparkimage.ConfImageRepo + `:` + d.Version + `
    command: [/opt/spark/bin/spark-submit]
    args: [local:///opt/sparklet/deps/userskept.py]
` + route.env + `    volumeMounts:
    - {name: scratch, mountPath: /scratch}
`
				ns := namespace(t)
				start := time.Now()
				kubectl(t, []byte(manifest), "apply", "-n", ns, "-f", "-")
				done := waitPod(t, ns, "userskept", "finished", 5*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
				finished := time.Now()
				if done.Status.Phase != corev1.PodSucceeded {
					t.Fatalf("driver pod %s, want Succeeded\nconf init: %s\n%s", done.Status.Phase,
						tail(log(ns, "userskept", patches.ConfInitName), 20), driverLogTail(ns, "userskept"))
				}
				checkUsersPodKept(t, done, conf)
				driverLog := log(ns, "userskept", "spark")
				root := checkUsersJVMKept(t, driverLog)
				if t.Failed() {
					t.Logf("driver log (tail):\n%s", tail(driverLog, 60))
				}
				t.Logf("Spark %s, local dir from %s: apply→pod Succeeded %v; SparkFiles root %s", d.Version, route.name,
					finished.Sub(start).Round(time.Millisecond), root)
			})
		}
	}
}

// checkUsersJVMKept checks what the driver JVM logged and its script
// printed, and returns the driver's SparkFiles root.
func checkUsersJVMKept(t *testing.T, driverLog string) string {
	t.Helper()
	got := checkLines(driverLog)
	wantChecks(t, got, map[string]string{
		"app-name":       "sparklet-user-conf-kept",
		"shuffle":        "7 partitions, 5 keys, 1000 rows",
		"driver-memory":  "640m",
		"env-local-dirs": "/scratch",
	})
	// -Xmx640m: the launcher read the user's line after the image's 768m,
	// and no policy default of 512m after it.
	if heap, err := strconv.Atoi(got["max-heap-mib"]); err != nil || heap <= 512 || heap > 640 {
		t.Errorf("max heap %q MiB, want over 512 and at most 640 (the user's spark.driver.memory=640m)", got["max-heap-mib"])
	}
	if !underScratch(got["files-root"]) {
		t.Errorf("the driver's SparkFiles root %q, want one under the pod's own /scratch", got["files-root"])
	}
	created := createdLocalDir.FindAllStringSubmatch(driverLog, -1)
	if len(created) == 0 {
		t.Errorf("no %q line in the driver's log", "Created local directory at")
	}
	for _, m := range created {
		if !underScratch(m[1]) {
			t.Errorf("the driver created local directory %s, want one under /scratch", m[1])
		}
	}
	if !strings.Contains(driverLog, "Submitted application: sparklet-user-conf-kept") {
		t.Errorf("the driver did not log %q", "Submitted application: sparklet-user-conf-kept")
	}
	return got["files-root"]
}

// checkUsersPodKept checks the injected driver pod: the user's conf
// annotation as written and none of its keys in the effective conf, the
// user's volume the only one at /scratch, no emptyDir of sparklet's for
// local dirs, and SPARK_LOCAL_DIRS naming /scratch.
func checkUsersPodKept(t *testing.T, pod *corev1.Pod, conf string) {
	t.Helper()
	if got := pod.Annotations[vocab.AnnotationSparkConf]; got != conf {
		t.Errorf("%s is %q, want the pod's own %q", vocab.AnnotationSparkConf, got, conf)
	}
	effective, err := sparkconf.Parse(pod.Annotations[vocab.AnnotationEffectiveConf])
	if err != nil {
		t.Fatalf("%s: %v", vocab.AnnotationEffectiveConf, err)
	}
	user, err := sparkconf.Parse(conf)
	if err != nil {
		t.Fatal(err)
	}
	for k := range user {
		if v, ok := effective[k]; ok {
			t.Errorf("%s repeats the user's %s (%q)", vocab.AnnotationEffectiveConf, k, v)
		}
	}
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, patches.VolumeLocal) {
			t.Errorf("sparklet added local-dir volume %s although the pod mounts its own at /scratch", v.Name)
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name != "spark" {
			continue
		}
		for _, m := range c.VolumeMounts {
			if m.MountPath == "/scratch" && m.Name != "scratch" {
				t.Errorf("volume %s mounted at /scratch, want only the pod's own scratch", m.Name)
			}
		}
		var dirs []string
		for _, e := range c.Env {
			if e.Name == "SPARK_LOCAL_DIRS" {
				dirs = append(dirs, e.Value)
			}
		}
		if len(dirs) != 1 || dirs[0] != "/scratch" {
			t.Errorf("the Spark container's SPARK_LOCAL_DIRS %q, want one, /scratch", dirs)
		}
	}
}

func underScratch(dir string) bool { return strings.HasPrefix(dir, "/scratch/") }

func indent(text, prefix string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if line != "" {
			b.WriteString(prefix + line)
		}
	}
	return b.String()
}
