package sparkimage

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/test/e2egate"
)

// TestLocalMode runs every pinned distribution in Spark's plain local mode,
// as installed by make spark-dists: SparkPi from the examples jar and the
// pi.py example, each of which must print an estimate of pi. It runs with
// SPARKLET_E2E=1 and SPARKLET_BIN_DIR (make test sets them).
func TestLocalMode(t *testing.T) {
	bin := e2egate.BinDir(t, "with bin/spark in it")
	dists, err := spark.Pinned()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dists {
		t.Run(d.Version, func(t *testing.T) {
			if err := d.Installed(bin); err != nil {
				t.Fatal(err)
			}
			home := d.Home(bin)
			t.Run("SparkPi", func(t *testing.T) {
				checkPi(t, runLocal(t, home, "--class", "org.apache.spark.examples.SparkPi", filepath.Join(home, d.ExamplesJar()), "20"))
			})
			t.Run("pi.py", func(t *testing.T) {
				checkPi(t, runLocal(t, home, filepath.Join(home, "examples/src/main/python/pi.py"), "10"))
			})
		})
	}
}

// runLocal runs spark-submit of the distribution at home in local mode on
// loopback and returns its stdout.
func runLocal(t *testing.T, home string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	argv := append([]string{"--master", "local[2]", "--driver-memory", "512m", "--conf", "spark.ui.enabled=false"}, args...)
	cmd := exec.CommandContext(ctx, filepath.Join(home, "bin/spark-submit"), argv...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "SPARK_HOME="+home, "SPARK_LOCAL_IP=127.0.0.1", "SPARK_CONF_DIR="+cmd.Dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("spark-submit %s: %v\n%s", strings.Join(argv, " "), err, tail(stderr.String(), 40))
	}
	return stdout.String()
}

var piLine = regexp.MustCompile(`(?m)^Pi is roughly (\d+\.\d+)$`)

func checkPi(t *testing.T, stdout string) {
	t.Helper()
	m := piLine.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no line 'Pi is roughly <value>' in the output:\n%s", stdout)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(v-math.Pi) >= 0.1 {
		t.Errorf("pi is roughly %v: off by more than 0.1", v)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
