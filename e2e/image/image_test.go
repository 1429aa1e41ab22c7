package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/sparklet/sparklet/test/e2egate"
)

// makeImage runs `make image` in the repository and returns the tarball's bytes.
func makeImage(t *testing.T) []byte {
	t.Helper()
	e2egate.BinDir(t, "for make image") // skips without SPARKLET_E2E
	cmd := exec.Command("make", "-C", "../..", "image")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	data, err := os.ReadFile("../../bin/sparklet-image.tar")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// files reads a tar stream into name → contents and headers.
func files(t *testing.T, r io.Reader) (map[string][]byte, map[string]*tar.Header) {
	t.Helper()
	data, hdrs := map[string][]byte{}, map[string]*tar.Header{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return data, hdrs
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		data[h.Name], hdrs[h.Name] = b, h
	}
}

type manifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

type config struct {
	Architecture, OS string
	Config           struct {
		User       string
		Entrypoint []string
		Cmd        []string
		Labels     map[string]string
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

func TestImage(t *testing.T) {
	first := makeImage(t)
	second := makeImage(t)
	if !bytes.Equal(first, second) {
		t.Error("two builds of the same commit differ: the image is not reproducible")
	}

	blobs, _ := files(t, bytes.NewReader(first))
	var manifests []manifest
	if err := json.Unmarshal(blobs["manifest.json"], &manifests); err != nil || len(manifests) != 1 {
		t.Fatalf("manifest.json: %v, %d images", err, len(manifests))
	}
	m := manifests[0]
	var cfg config
	if err := json.Unmarshal(blobs[m.Config], &cfg); err != nil {
		t.Fatalf("config %s: %v", m.Config, err)
	}
	if cfg.Config.User != "65532:65532" || !reflect.DeepEqual(cfg.Config.Entrypoint, []string{"/sparklet"}) || cfg.Config.Cmd != nil {
		t.Errorf("config runs %v %v as %q; want /sparklet as 65532:65532", cfg.Config.Entrypoint, cfg.Config.Cmd, cfg.Config.User)
	}
	if cfg.OS != "linux" || cfg.Architecture == "" {
		t.Errorf("platform %s/%s", cfg.OS, cfg.Architecture)
	}
	rev, _ := exec.Command("git", "rev-parse", "HEAD").Output()
	for k, want := range map[string]string{
		"org.opencontainers.image.source":   "https://github.com/sparklet/sparklet",
		"org.opencontainers.image.revision": strings.TrimSpace(string(rev)),
		"org.opencontainers.image.title":    "sparklet",
	} {
		if cfg.Config.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, cfg.Config.Labels[k], want)
		}
	}
	if cfg.Config.Labels["org.opencontainers.image.version"] == "" {
		t.Error("no version label")
	}

	// The chart's default image is this one.
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	var values struct {
		Image struct{ Repository, Tag string } `json:"image"`
	}
	readYAML(t, "../../charts/sparklet/Chart.yaml", &chart)
	readYAML(t, "../../charts/sparklet/values.yaml", &values)
	tag := values.Image.Tag
	if tag == "" {
		tag = chart.AppVersion
	}
	if want := values.Image.Repository + ":" + tag; !reflect.DeepEqual(m.RepoTags, []string{want}) {
		t.Errorf("tagged %v, the chart's default image is %s", m.RepoTags, want)
	}

	// One layer: /sparklet and /sparklet-sidecar, root-owned, executable,
	// whose digest is the config's diff_id; they run.
	if len(m.Layers) != 1 || len(cfg.RootFS.DiffIDs) != 1 {
		t.Fatalf("layers %v, diff_ids %v; want the binaries' layer alone", m.Layers, cfg.RootFS.DiffIDs)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blobs[m.Layers[0]]))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != cfg.RootFS.DiffIDs[0] {
		t.Errorf("layer digest %s, config says %s", got, cfg.RootFS.DiffIDs[0])
	}
	contents, hdrs := files(t, bytes.NewReader(raw))
	if len(hdrs) != 2 {
		t.Fatalf("layer holds %v; want sparklet and sparklet-sidecar", hdrs)
	}
	dir := t.TempDir()
	for _, name := range []string{"sparklet", "sparklet-sidecar"} {
		h := hdrs[name]
		if h == nil || h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 {
			t.Fatalf("layer holds %v; want %s, 0755, owned by root", hdrs, name)
		}
		bin := filepath.Join(dir, name)
		if err := os.WriteFile(bin, contents[name], 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "version").CombinedOutput()
		if err != nil || !strings.Contains(string(out), cfg.Config.Labels["org.opencontainers.image.version"]) {
			t.Errorf("the image's %s: version: %v: %q, want the version label %q", name, err, out, cfg.Config.Labels["org.opencontainers.image.version"])
		}
	}
	// sparklet-sidecar is the sidecar-only build.
	out, err := exec.Command(filepath.Join(dir, "sparklet-sidecar"), "webhook").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `unknown command "webhook"`) {
		t.Errorf("sparklet-sidecar webhook: %v: %q; want it refused, the sidecar-only build has no webhook", err, out)
	}
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
