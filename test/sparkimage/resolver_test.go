package sparkimage

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sparklet/sparklet/hack/spark"
)

// pins stand for hack/spark/versions, so these tests do not change when a
// pin moves.
var pins = []spark.Dist{
	{Version: "3.5.9", Scala: "2.12", SHA256: "aaa", Major: 3, Minor: 5},
	{Version: "4.0.5", Scala: "2.13", SHA256: "bbb", Major: 4, Minor: 0},
	{Version: "4.3.0", Scala: "2.13", SHA256: "ccc", Major: 4, Minor: 3},
}

// fakeBin lays out what make spark-dists and make build leave in bin/.
func fakeBin(t *testing.T, dists []spark.Dist) string {
	t.Helper()
	bin := t.TempDir()
	for _, d := range dists {
		if err := os.MkdirAll(d.Home(bin), 0o755); err != nil {
			t.Fatal(err)
		}
		stamp := strings.Join([]string{d.Version, d.Scala, d.SHA256, "layout=x"}, " ") + "\n"
		if err := os.WriteFile(filepath.Join(d.Home(bin), ".stamp"), []byte(stamp), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"sparklet", "sparklet-sidecar"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/true\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

func TestResolverSparkImages(t *testing.T) {
	bin := fakeBin(t, pins)
	resolve := resolver(bin, "", pins, nil, "/jdk", nil)
	for _, tc := range []struct {
		image string
		dist  string // the distribution bound at /opt/spark
	}{
		{"apache/spark:3.5.4", "3.5.9"},
		{"apache/spark:3.5.9-scala2.12-java17-python3-ubuntu", "3.5.9"},
		{"apache/spark:3.5.4-python3", "3.5.9"},
		{"apache/spark:3.4.1", "3.5.9"},
		{"spark:4.0.0", "4.0.5"},
		{"docker.io/apache/spark:4.0.5", "4.0.5"},
		{"index.docker.io/apache/spark:4.0", "4.0.5"},
		{"docker.io/library/spark:4.1.1-scala2.13-java21-ubuntu", "4.3.0"},
		{"apache/spark:4.2.0-preview5", "4.3.0"},
		{"apache/spark:4.3.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "4.3.0"},
	} {
		t.Run(tc.image, func(t *testing.T) {
			img, err := resolve(tc.image)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"/opt/spark": filepath.Join(bin, "spark", tc.dist)}
			if !reflect.DeepEqual(img.Binds, want) {
				t.Errorf("binds %v, want %v", img.Binds, want)
			}
			if img.WorkingDir != "/opt/spark/work-dir" {
				t.Errorf("working dir %q, want /opt/spark/work-dir", img.WorkingDir)
			}
			wantEnv := []string{
				"PATH=/jdk/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"JAVA_HOME=/jdk", "LANG=C.UTF-8", "LANGUAGE=en_US:en", "LC_ALL=C.UTF-8",
				"SPARK_HOME=/opt/spark", "JDK_JAVA_OPTIONS=-XX:TieredStopAtLevel=1",
			}
			if !reflect.DeepEqual(img.Env, wantEnv) {
				t.Errorf("env %q, want %q", img.Env, wantEnv)
			}
			if img.Entrypoint == nil {
				t.Error("no entrypoint")
			}
		})
	}
}

func TestResolverSparkletImage(t *testing.T) {
	bin := fakeBin(t, nil)
	resolve := resolver(bin, "", pins, nil, "/jdk", nil)
	for _, image := range []string{"ghcr.io/sparklet/sparklet:dev", "ghcr.io/sparklet/sparklet:v1.2.3@sha256:00", "ghcr.io/sparklet/sparklet"} {
		img, err := resolve(image)
		if err != nil {
			t.Fatalf("%s: %v", image, err)
		}
		if want := map[string]string{"/sparklet": filepath.Join(bin, "sparklet"), "/sparklet-sidecar": filepath.Join(bin, "sparklet-sidecar")}; !reflect.DeepEqual(img.Binds, want) {
			t.Errorf("%s: binds %v, want %v", image, img.Binds, want)
		}
		argv, _, err := img.Entrypoint(nil, []string{"sidecar", "--v=2"}, nil)
		if err != nil || !reflect.DeepEqual(argv, []string{"/sparklet", "sidecar", "--v=2"}) {
			t.Errorf("%s: argv %q, %v; want /sparklet sidecar --v=2", image, argv, err)
		}
	}
}

// TestResolverSparkletImageNeedsBoth: without the sidecar-only build the
// image cannot be played, and the error says which file and what to run.
func TestResolverSparkletImageNeedsBoth(t *testing.T) {
	bin := fakeBin(t, nil)
	if err := os.Remove(filepath.Join(bin, "sparklet-sidecar")); err != nil {
		t.Fatal(err)
	}
	_, err := resolver(bin, "", pins, nil, "/jdk", nil)("ghcr.io/sparklet/sparklet:dev")
	if err == nil || !strings.Contains(err.Error(), "sparklet-sidecar is missing: run make build") {
		t.Errorf("without bin/sparklet-sidecar: %v", err)
	}
}

func TestResolverPauseImage(t *testing.T) {
	resolve := resolver(fakeBin(t, nil), "", pins, nil, "/jdk", nil)
	for _, image := range []string{"registry.k8s.io/pause:3.7", "registry.k8s.io/pause:3.10"} {
		img, err := resolve(image)
		if err != nil {
			t.Fatalf("%s: %v", image, err)
		}
		argv, _, err := img.Entrypoint(nil, nil, nil)
		if err != nil || !reflect.DeepEqual(argv, []string{"/bin/sleep", "infinity"}) {
			t.Errorf("%s: argv %q, %v; want /bin/sleep infinity", image, argv, err)
		}
	}
}

func TestResolverRefuses(t *testing.T) {
	bin := fakeBin(t, pins[:2]) // 4.3.0 not installed
	resolve := resolver(bin, "", pins, nil, "/jdk", nil)
	for _, tc := range []struct{ image, err string }{
		{"apache/spark", `tag "" names no Spark version`},
		{"apache/spark:latest", `tag "latest" names no Spark version`},
		{"apache/spark@sha256:0123", `tag "" names no Spark version`},
		{"apache/spark:python3", `tag "python3" names no Spark version`},
		{"apache/spark:5.0.0", "no pinned Spark distribution runs Spark 5.0"},
		{"apache/spark:4.4.0", "no pinned Spark distribution runs Spark 4.4"},
		{"apache/spark:2.4.8", "no pinned Spark distribution runs Spark 2.4"},
		{"apache/spark:4.1.0", "spark 4.3.0 is not installed"},
		{"apache/spark-py:v3.4.0", "no local mapping"},
		{"busybox", "no local mapping"},
		{"k8s.gcr.io/pause:3.7", "no local mapping"},
		{"quay.io/apache/spark:3.5.4", "no local mapping"},
		{"ghcr.io/sparklet/sparklet-other:dev", "no local mapping"},
	} {
		_, err := resolve(tc.image)
		if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tc.image) {
			t.Errorf("%s: error %v, want one naming the image and saying %q", tc.image, err, tc.err)
		}
	}
}

func TestResolverStaleInstall(t *testing.T) {
	bin := fakeBin(t, pins)
	moved := append([]spark.Dist{}, pins...)
	moved[0].SHA256 = "another"
	_, err := resolver(bin, "", moved, nil, "/jdk", nil)("apache/spark:3.5.9")
	if err == nil || !strings.Contains(err.Error(), "installed from another pin") {
		t.Errorf("error %v, want installed from another pin", err)
	}
}

func TestParseReference(t *testing.T) {
	for _, tc := range []struct{ image, repo, tag string }{
		{"spark", "docker.io/library/spark", ""},
		{"spark:3.5.4", "docker.io/library/spark", "3.5.4"},
		{"apache/spark:3.5.4", "docker.io/apache/spark", "3.5.4"},
		{"docker.io/spark:3.5.4", "docker.io/library/spark", "3.5.4"},
		{"index.docker.io/apache/spark:3.5.4@sha256:ab", "docker.io/apache/spark", "3.5.4"},
		{"localhost:5000/spark", "localhost:5000/spark", ""},
		{"localhost/spark:1", "localhost/spark", "1"},
		{"ghcr.io/sparklet/sparklet:v1", "ghcr.io/sparklet/sparklet", "v1"},
	} {
		repo, tag := parseReference(tc.image)
		if repo != tc.repo || tag != tc.tag {
			t.Errorf("%s: %s %q, want %s %q", tc.image, repo, tag, tc.repo, tc.tag)
		}
	}
}

func TestResolverConfImage(t *testing.T) {
	bin := fakeBin(t, pins)
	img, err := resolver(bin, "/tmp/conf", pins, nil, "/jdk", nil)(ConfImageRepo + ":3.5.9")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/opt/spark": filepath.Join(bin, "spark", "3.5.9"), "/opt/spark/conf": "/tmp/conf"}
	if !reflect.DeepEqual(img.Binds, want) {
		t.Errorf("binds %v, want %v", img.Binds, want)
	}
	if _, err := resolver(bin, "", pins, nil, "/jdk", nil)(ConfImageRepo + ":3.5.9"); err == nil || !strings.Contains(err.Error(), "no conf directory") {
		t.Errorf("err = %v, want no conf directory mapped", err)
	}
}
