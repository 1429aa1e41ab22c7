package nodeimages

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sparklet/sparklet/hack/nodeimages"
	"github.com/sparklet/sparklet/hack/spark"
	"github.com/sparklet/sparklet/test/e2egate"
)

type entry struct {
	Config   string
	RepoTags []string
	Layers   []string
}

type config struct {
	Config struct {
		User, WorkingDir string
		Entrypoint, Env  []string
	} `json:"config"`
}

// archive is one tarball: its manifest.json and a way to read its blobs.
type archive struct {
	path    string
	entries []entry
}

func open(t *testing.T, path string) archive {
	t.Helper()
	a := archive{path: path}
	if err := json.Unmarshal(a.blob(t, "manifest.json"), &a.entries); err != nil {
		t.Fatalf("%s: manifest.json: %v", path, err)
	}
	return a
}

// blob returns a small member of the tarball.
func (a archive) blob(t *testing.T, name string) []byte {
	t.Helper()
	var data []byte
	a.walk(t, name, func(r io.Reader) {
		var err error
		if data, err = io.ReadAll(r); err != nil {
			t.Fatal(err)
		}
	})
	if data == nil {
		t.Fatalf("%s has no %s", a.path, name)
	}
	return data
}

// walk calls fn with the member name of the tarball.
func (a archive) walk(t *testing.T, name string, fn func(io.Reader)) {
	t.Helper()
	f, err := os.Open(a.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries(t, f, func(hdr *tar.Header, r io.Reader) bool {
		if hdr.Name == name {
			fn(r)
		}
		return hdr.Name != name
	})
}

// layer lists a gzipped layer's headers by name.
func (a archive) layer(t *testing.T, name string) map[string]*tar.Header {
	t.Helper()
	hdrs := map[string]*tar.Header{}
	a.walk(t, name, func(r io.Reader) {
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		entries(t, zr, func(hdr *tar.Header, _ io.Reader) bool {
			hdrs[hdr.Name] = hdr
			return true
		})
	})
	return hdrs
}

// entries calls fn for each entry of the tar stream r while it returns
// true.
func entries(t *testing.T, r io.Reader, fn func(*tar.Header, io.Reader) bool) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !fn(hdr, tr) {
			return
		}
	}
}

func (a archive) image(t *testing.T, tag string) (entry, config) {
	t.Helper()
	for _, e := range a.entries {
		if slices.Contains(e.RepoTags, tag) {
			var c config
			if err := json.Unmarshal(a.blob(t, e.Config), &c); err != nil {
				t.Fatal(err)
			}
			return e, c
		}
	}
	t.Fatalf("%s has no image tagged %s", a.path, tag)
	return entry{}, config{}
}

func TestSparkImages(t *testing.T) {
	bin := e2egate.BinDir(t, "with the images of make node-images")
	dists, err := spark.Pinned()
	if err != nil {
		t.Fatal(err)
	}
	var bases []string
	for _, d := range dists {
		t.Run(d.Version, func(t *testing.T) {
			a := open(t, filepath.Join(bin, "images", "spark-"+d.Version+".tar"))
			repo := "docker.io/apache/spark:" + d.Version
			py, pyConfig := a.image(t, repo)
			noPy, noPyConfig := a.image(t, repo+"-scala")
			for _, tag := range []string{repo + "-python3", repo + "-java17", repo + "-scala" + d.Scala + "-java17-python3-ubuntu"} {
				if !slices.Contains(py.RepoTags, tag) {
					t.Errorf("the python3 image is not tagged %s: %q", tag, py.RepoTags)
				}
			}
			for _, c := range []config{pyConfig, noPyConfig} {
				if c.Config.User != "spark" || c.Config.WorkingDir != "/opt/spark/work-dir" || !slices.Equal(c.Config.Entrypoint, []string{"/opt/entrypoint.sh"}) {
					t.Errorf("config runs %q as %q in %q; want /opt/entrypoint.sh as spark in /opt/spark/work-dir", c.Config.Entrypoint, c.Config.User, c.Config.WorkingDir)
				}
				for _, kv := range []string{"JAVA_HOME=/opt/java/openjdk", "SPARK_HOME=/opt/spark", "LANG=en_US.UTF-8"} {
					if !slices.Contains(c.Config.Env, kv) {
						t.Errorf("env %q lacks %s", c.Config.Env, kv)
					}
				}
			}
			// base, python, spark; and base, spark.
			if len(py.Layers) != 3 || len(noPy.Layers) != 2 || py.Layers[0] != noPy.Layers[0] || py.Layers[2] != noPy.Layers[1] {
				t.Fatalf("layers %q and %q; want base, python, spark and base, spark, shared", py.Layers, noPy.Layers)
			}
			bases = append(bases, py.Layers[0])

			sparkLayer := a.layer(t, py.Layers[2])
			for name, want := range map[string]struct {
				mode     int64
				uid, gid int
			}{
				"opt/spark/":          {0o755, 185, 185},
				"opt/spark/work-dir/": {0o775, 185, 185},
				"opt/spark/jars/spark-kubernetes_" + d.Scala + "-" + d.Version + ".jar": {0o644, 185, 185},
				"opt/spark/bin/spark-submit": {0o755, 185, 185},
				"opt/entrypoint.sh":          {0o755, 0, 0},
				"opt/decom.sh":               {0o755, 185, 185},
			} {
				h := sparkLayer[name]
				if h == nil || h.Mode != want.mode || h.Uid != want.uid || h.Gid != want.gid {
					t.Errorf("spark layer %s: %+v; want mode %o owned by %d:%d", name, h, want.mode, want.uid, want.gid)
				}
			}
			if h := sparkLayer["opt/spark/conf/"]; h != nil {
				t.Error("the spark layer has opt/spark/conf/, which the official image has not")
			}
			if h := a.layer(t, py.Layers[1])["usr/bin/python3.11"]; h == nil {
				t.Error("the python layer has no usr/bin/python3.11")
			}
		})
	}
	for _, b := range bases[1:] {
		if b != bases[0] {
			t.Errorf("base layers %q differ between versions; containerd would store each", bases)
			break
		}
	}

	base := open(t, filepath.Join(bin, "images", "spark-"+dists[0].Version+".tar"))
	layer := base.layer(t, bases[0])
	for _, name := range []string{"usr/bin/tini", "usr/sbin/gosu", "opt/java/openjdk", "usr/lib/x86_64-linux-gnu/libnss_wrapper.so", "usr/lib/locale/locale-archive"} {
		if layer[name] == nil {
			t.Errorf("the base layer has no %s", name)
		}
	}
	if java := layer["opt/java/openjdk"]; java != nil && java.Linkname != "/usr/lib/jvm/java-17-openjdk-amd64" {
		t.Errorf("opt/java/openjdk -> %q, want Debian's Java 17", java.Linkname)
	}
}

func TestPauseAndKubectlImages(t *testing.T) {
	bin := e2egate.BinDir(t, "with the images of make node-images")
	for _, tc := range []struct {
		tarball, tag, path, user string
	}{
		{"pause.tar", nodeimages.SandboxImage(), "/pause", "65535:65535"},
		{"kubectl.tar", "", "/bin/kubectl", ""},
	} {
		a := open(t, filepath.Join(bin, "images", tc.tarball))
		if len(a.entries) != 1 || len(a.entries[0].Layers) != 1 {
			t.Fatalf("%s: %+v; want one image of one layer", tc.tarball, a.entries)
		}
		e := a.entries[0]
		if tc.tag != "" && !slices.Contains(e.RepoTags, tc.tag) {
			t.Errorf("%s is tagged %q, not %s", tc.tarball, e.RepoTags, tc.tag)
		}
		var c config
		if err := json.Unmarshal(a.blob(t, e.Config), &c); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.Config.Entrypoint, []string{tc.path}) || c.Config.User != tc.user {
			t.Errorf("%s runs %q as %q; want %s as %q", tc.tarball, c.Config.Entrypoint, c.Config.User, tc.path, tc.user)
		}
		if h := a.layer(t, e.Layers[0])[tc.path[1:]]; h == nil || h.Mode != 0o755 {
			t.Errorf("%s: %s in the layer: %+v, want mode 0755", tc.tarball, tc.path, h)
		}
	}
}
