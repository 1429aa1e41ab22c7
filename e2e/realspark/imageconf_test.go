package realspark

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sparklet/sparklet/test/sparkimage"
)

// imageConf is the $SPARK_HOME/conf of the sparkimage.ConfImageRepo
// images: one file of each kind Spark reads from its conf directory, each
// with a mark the driver program can see.
var imageConf = map[string]string{
	// Ranked below every layer sparklet writes: the policy's default
	// spark.driver.memory (512m) wins; a key nobody else sets applies.
	"spark-defaults.conf": "spark.driver.memory 768m\nspark.sparklet.imageOnly from-image\n",
	"spark-env.sh":        "export SPARKLET_IMAGE_ENV=from-spark-env\n",
	"log4j2.properties": `rootLogger.level = info
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = IMAGE-LOG4J2 %p %c{1}: %m%n
`,
	"metrics.properties": "*.sink.servlet.class=org.apache.spark.metrics.sink.MetricsServlet\n" +
		"*.sink.servlet.path=/sparklet-image-metrics/json\n",
	"core-site.xml": siteXML("sparklet.test.core-site", "from-core-site"),
	"hive-site.xml": siteXML("sparklet.test.hive-site", "from-hive-site"),
}

func siteXML(name, value string) string {
	return `<?xml version="1.0"?>
<configuration>
  <property><name>` + name + `</name><value>` + value + `</value></property>
</configuration>
`
}

// writeImageConf writes imageConf into dir.
func writeImageConf(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, text := range imageConf {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// checkScript starts a PySpark driver script that prints what it finds
// as "CHECK name=value" lines, which checkLines parses.
const checkScript = `import os
import sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
sc = spark.sparkContext


def check(name, f):
    try:
        v = f()
    except Exception as e:
        v = "error: %s" % str(e).splitlines()[0]
    # One write with its newline: Spark runs the script unbuffered
    # (PYTHONUNBUFFERED) and copies its output between the JVM's log lines.
    sys.stdout.write("CHECK %s=%s\n" % (name, v))

`

// checkLines parses the "CHECK name=value" lines a driver script printed.
func checkLines(driverLog string) map[string]string {
	got := map[string]string{}
	for _, line := range strings.Split(driverLog, "\n") {
		if rest, ok := strings.CutPrefix(line, "CHECK "); ok {
			if k, v, ok := strings.Cut(rest, "="); ok {
				got[k] = v
			}
		}
	}
	return got
}

// wantChecks fails for each check whose value is not the one wanted.
func wantChecks(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: the driver saw %q, want %q", k, got[k], w)
		}
	}
}

// imageConfScript prints what the driver sees of each file of the image's
// conf directory. The session's Hadoop conf holds core-site.xml, from the
// classpath, and hive-site.xml, which the SharedState loads from the
// classpath; the driver's UI serves its metrics at the path that only
// metrics.properties names.
const imageConfScript = checkScript + `import urllib.request


def metrics_servlet():
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(sc.uiWebUrl + "/sparklet-image-metrics/json", timeout=30) as r:
        return int(b'"gauges"' in r.read())


hadoop = lambda: spark._jsparkSession.sessionState().newHadoopConf()
check("spark-env", lambda: os.environ.get("SPARKLET_IMAGE_ENV", ""))
check("core-site", lambda: hadoop().get("sparklet.test.core-site"))
check("hive-site", lambda: hadoop().get("sparklet.test.hive-site"))
check("image-only", lambda: sc.getConf().get("spark.sparklet.imageOnly", ""))
check("driver-memory", lambda: sc.getConf().get("spark.driver.memory", ""))
check("max-heap-mib", lambda: sc._jvm.java.lang.Runtime.getRuntime().maxMemory() // (1024 * 1024))
check("metrics-servlet", metrics_servlet)
spark.stop()
`

// TestImageConf runs a PySpark driver from an image whose conf directory
// holds spark-defaults.conf, spark-env.sh, log4j2.properties,
// metrics.properties, core-site.xml and hive-site.xml, and checks that the
// JVM used each of them, with the policy's defaults ranking above the
// image's spark-defaults.conf.
func TestImageConf(t *testing.T) {
	sum := sha256.Sum256([]byte(imageConfScript))
	url := files.Serve("py/imageconf.py", []byte(imageConfScript))
	for _, d := range dists {
		if d.Version != "3.5.9" && d.Version != "4.3.0" {
			continue
		}
		t.Run(d.Version, func(t *testing.T) {
			manifest := `apiVersion: v1
kind: Pod
metadata:
  name: imageconf
  labels: {spark-role: driver}
  annotations:
    sparklet.io/spark-conf: |
      spark.executor.instances 1
    sparklet.io/fetch: |
      - url: ` + url + `
        sha256: "` + hex.EncodeToString(sum[:]) + `"
spec:
  restartPolicy: Never
  containers:
  - name: spark
    image: ` + sparkimage.ConfImageRepo + `:` + d.Version + `
    command: [/opt/spark/bin/spark-submit]
    args: [local:///opt/sparklet/deps/imageconf.py]
`
			ns := namespace(t)
			kubectl(t, []byte(manifest), "apply", "-n", ns, "-f", "-")
			done := waitPod(t, ns, "imageconf", "finished", 5*time.Minute, phaseIs(corev1.PodSucceeded, corev1.PodFailed))
			if done.Status.Phase != corev1.PodSucceeded {
				t.Fatalf("driver pod %s, want Succeeded\nconf init: %s\n%s", done.Status.Phase,
					tail(log(ns, "imageconf", "sparklet-spark-conf"), 20), driverLogTail(ns, "imageconf"))
			}
			driverLog := log(ns, "imageconf", "spark")
			got := checkLines(driverLog)
			wantChecks(t, got, map[string]string{
				"spark-env":     "from-spark-env",
				"core-site":     "from-core-site",
				"hive-site":     "from-hive-site",
				"image-only":    "from-image",
				"driver-memory": "512m",
			})
			// -Xmx512m, not the image's 768m: the launcher read the merged
			// spark-defaults.conf too.
			if heap, err := strconv.Atoi(got["max-heap-mib"]); err != nil || heap > 512 {
				t.Errorf("max heap %q MiB, want at most 512 (spark.driver.memory=512m)", got["max-heap-mib"])
			}
			if got["metrics-servlet"] != "1" {
				t.Errorf("metrics at the UI's /sparklet-image-metrics/json: %q, want 1: metrics.properties names that path", got["metrics-servlet"])
			}
			if !strings.Contains(driverLog, "IMAGE-LOG4J2 INFO SparkContext: Running Spark version") {
				t.Errorf("the driver did not log with the image's log4j2.properties pattern\n%s", tail(driverLog, 20))
			}
			if t.Failed() {
				t.Logf("driver log:\n%s", driverLogTail(ns, "imageconf"))
			}
		})
	}
}
