package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// rootfsEntry is one entry of a test rootfs tarball.
type rootfsEntry struct {
	name, body, link string
	typ              byte
	mode             int64
}

func writeRootfs(t *testing.T, p string, entries []rootfsEntry) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Typeflag: e.typ, Name: e.name, Linkname: e.link, Mode: e.mode, Size: int64(len(e.body)), ModTime: time.Unix(0, 0)}
		if e.typ != tar.TypeReg {
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil && e.typ == tar.TypeReg {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// layerEntries lists a gzipped layer's entries as name -> body (a link
// as "-> target").
func layerEntries(t *testing.T, l layer) map[string]string {
	t.Helper()
	f, err := os.Open(l.path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lay, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return os.Open(l.path) })
	if err != nil {
		t.Fatal(err)
	}
	r, err := lay.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := map[string]string{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		if hdr.Typeflag == tar.TypeLink || hdr.Typeflag == tar.TypeSymlink {
			body = []byte("-> " + hdr.Linkname)
		}
		got[hdr.Name] = string(body)
	}
}

// TestDiffRootfs checks the python layer's construction: what upper
// changed or added, a whiteout for what it removed (once per removed
// tree), a hard link with its target, and nothing of /dev but the
// directory.
func TestDiffRootfs(t *testing.T) {
	dir := t.TempDir()
	lower, upper := filepath.Join(dir, "lower.tar"), filepath.Join(dir, "upper.tar")
	common := []rootfsEntry{
		{name: "./", typ: tar.TypeDir, mode: 0o755},
		{name: "./dev/", typ: tar.TypeDir, mode: 0o755},
		{name: "./dev/null", typ: tar.TypeChar, mode: 0o666},
		{name: "./etc/", typ: tar.TypeDir, mode: 0o755},
		{name: "./usr/bin/same", typ: tar.TypeReg, mode: 0o755, body: "same"},
		{name: "./usr/bin/linked", typ: tar.TypeReg, mode: 0o755, body: "unchanged target"},
	}
	writeRootfs(t, lower, append(common[:len(common):len(common)],
		rootfsEntry{name: "./etc/status", typ: tar.TypeReg, mode: 0o644, body: "base"},
		rootfsEntry{name: "./etc/gone", typ: tar.TypeReg, mode: 0o644, body: "x"},
		rootfsEntry{name: "./var/old/", typ: tar.TypeDir, mode: 0o755},
		rootfsEntry{name: "./var/old/file", typ: tar.TypeReg, mode: 0o644, body: "y"},
		rootfsEntry{name: "./var/", typ: tar.TypeDir, mode: 0o755},
		rootfsEntry{name: "./usr/bin/mode", typ: tar.TypeReg, mode: 0o644, body: "m"},
	))
	writeRootfs(t, upper, append(common[:len(common):len(common)],
		rootfsEntry{name: "./etc/status", typ: tar.TypeReg, mode: 0o644, body: "base+python"},
		rootfsEntry{name: "./var/", typ: tar.TypeDir, mode: 0o755},
		rootfsEntry{name: "./usr/bin/mode", typ: tar.TypeReg, mode: 0o755, body: "m"},
		rootfsEntry{name: "./usr/bin/python3", typ: tar.TypeReg, mode: 0o755, body: "py"},
		rootfsEntry{name: "./usr/bin/python3.11", typ: tar.TypeLink, link: "./usr/bin/python3"},
		rootfsEntry{name: "./usr/bin/new-link", typ: tar.TypeLink, link: "./usr/bin/linked"},
	))
	l, err := writeLayer(filepath.Join(dir, "layer"), "test", diffRootfs(lower, upper))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"etc/status":         "base+python",
		"usr/bin/mode":       "m",
		"usr/bin/python3":    "py",
		"usr/bin/python3.11": "-> usr/bin/python3",
		"usr/bin/linked":     "unchanged target",
		"usr/bin/new-link":   "-> usr/bin/linked",
		"etc/.wh.gone":       "",
		"var/.wh.old":        "",
	}
	if got := layerEntries(t, l); !reflect.DeepEqual(got, want) {
		t.Errorf("diff layer\n got %v\nwant %v", got, want)
	}

	base, err := writeLayer(filepath.Join(dir, "base"), "test", copyRootfs(lower))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range layerEntries(t, base) {
		names = append(names, n)
	}
	sort.Strings(names)
	wantNames := []string{"dev/", "etc/", "etc/gone", "etc/status", "usr/bin/linked", "usr/bin/mode", "usr/bin/same", "var/", "var/old/", "var/old/file"}
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("base layer has %q, want %q (no root, nothing under dev/)", names, wantNames)
	}
}

// TestWriteArchive writes two images sharing a layer and reads the
// tarball back both ways a runtime does: as an OCI layout (ctr images
// import) and through manifest.json (docker load), validating digests
// and diff IDs; the same input gives the same bytes.
func TestWriteArchive(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tool")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := []file{{name: "usr/", mode: 0o755}, {name: "usr/bin/", mode: 0o755}, {name: "usr/bin/tool", src: bin, mode: 0o755}}
	l, err := writeLayer(filepath.Join(dir, "l1"), "tool", writeFiles(files, time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	l2, err := writeLayer(filepath.Join(dir, "l2"), "more", writeFiles([]file{{name: "data/", uid: 185, gid: 185, mode: 0o775}}, time.Unix(0, 0)))
	if err != nil {
		t.Fatal(err)
	}
	images := []image{
		{layers: []layer{l}, config: v1.Config{Entrypoint: []string{"/usr/bin/tool"}}, tags: []string{"example.com/tool:1", "example.com/tool:latest"}},
		{layers: []layer{l, l2}, config: v1.Config{User: "185"}, tags: []string{"apache/spark:9.9.9"}},
	}
	write := func(out string) []written {
		ws, err := writeArchive(out, images, "amd64", time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}
	out := filepath.Join(dir, "images.tar")
	ws := write(out)
	if got, want := ws[1].tags, []string{"docker.io/apache/spark:9.9.9"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tags %q, want %q", got, want)
	}

	// manifest.json, as docker load reads it.
	for i, img := range images {
		for _, tag := range img.tags {
			ref, err := name.NewTag(tag)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tarball.ImageFromPath(out, &ref)
			if err != nil {
				t.Fatalf("%s from manifest.json: %v", tag, err)
			}
			if err := validate.Image(got); err != nil {
				t.Errorf("%s from manifest.json: %v", tag, err)
			}
			if id, _ := got.ConfigName(); id != ws[i].config {
				t.Errorf("%s: config %s, reported %s", tag, id, ws[i].config)
			}
		}
	}

	// The OCI layout, as ctr images import reads it.
	layoutDir := filepath.Join(dir, "layout")
	untar(t, out, layoutDir)
	idx, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range m.Manifests {
		names = append(names, d.Annotations["io.containerd.image.name"])
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate.Image(img); err != nil {
			t.Errorf("%s in the layout: %v", d.Digest, err)
		}
	}
	if want := []string{"example.com/tool:1", "example.com/tool:latest", "docker.io/apache/spark:9.9.9"}; !reflect.DeepEqual(names, want) {
		t.Errorf("index.json names %q, want %q", names, want)
	}

	first, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "again.tar")
	write(again)
	second, err := os.ReadFile(again)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Error("the same images written twice differ")
	}
}

func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
