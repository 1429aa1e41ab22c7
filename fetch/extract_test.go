package fetch

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sparklet/sparklet/fetch/spec"
)

// tarEntry is one header, with Body for regular files.
type tarEntry struct {
	Name, Link, Body string
	Type             byte
	Mode             int64
}

func file(name, body string) tarEntry {
	return tarEntry{Name: name, Body: body, Type: tar.TypeReg, Mode: 0o644}
}
func dir(name string) tarEntry { return tarEntry{Name: name, Type: tar.TypeDir, Mode: 0o755} }
func symlink(name, to string) tarEntry {
	return tarEntry{Name: name, Link: to, Type: tar.TypeSymlink, Mode: 0o777}
}
func hardlink(name, to string) tarEntry { return tarEntry{Name: name, Link: to, Type: tar.TypeLink} }

func tarGz(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Linkname: e.Link, Typeflag: e.Type, Mode: e.Mode, Size: int64(len(e.Body))}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.Body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zipEntry is one zip member; Size overrides the declared size when set.
type zipEntry struct {
	Name string
	Body []byte
	Mode fs.FileMode
	Size uint64
}

func zipOf(t *testing.T, entries ...zipEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.Name, Method: zip.Deflate}
		if e.Mode != 0 {
			h.SetMode(e.Mode)
		}
		if e.Size == 0 {
			w, err := zw.CreateHeader(h)
			if err == nil {
				_, err = w.Write(e.Body)
			}
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		// A header that lies about the unpacked size.
		var deflated bytes.Buffer
		fw, _ := flate.NewWriter(&deflated, flate.BestCompression)
		_, _ = fw.Write(e.Body)
		_ = fw.Close()
		h.CRC32 = crc32.ChecksumIEEE(e.Body)
		h.CompressedSize64 = uint64(deflated.Len())
		h.UncompressedSize64 = e.Size
		w, err := zw.CreateRaw(h)
		if err == nil {
			_, err = w.Write(deflated.Bytes())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// unpack runs extract on data in a fresh tree base/{archive,deps/} and
// returns deps/out and base.
func unpack(t *testing.T, kind string, data []byte, maxBytes int64) (out, base string, files int, err error) {
	t.Helper()
	base = t.TempDir()
	archive := filepath.Join(base, "archive")
	if err := os.WriteFile(archive, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, "deps"), 0o755); err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(base, "deps", "out")
	files, _, err = extract(context.Background(), archive, out, kind, maxBytes)
	return out, base, files, err
}

// tree lists every path under root, with link targets.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			to, _ := os.Readlink(p)
			rel += " -> " + to
		case d.IsDir():
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestExtractGood(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind string
		data func(t *testing.T) []byte
		want []string
	}{
		{"tar.gz", spec.TarGz, func(t *testing.T) []byte {
			return tarGz(t,
				dir("./"), dir("env/"),
				tarEntry{Name: "env/bin/python", Body: "#!py", Type: tar.TypeReg, Mode: 0o4777},
				file("env/lib/site.py", "import os"),
				symlink("env/bin/python3", "python"),
				symlink("env/lib64", "lib"),
				hardlink("env/bin/python3.12", "env/bin/python"),
				file("env/lib64/late.py", "through an inside link"),
			)
		}, []string{"env/", "env/bin/", "env/bin/python", "env/bin/python3 -> python", "env/bin/python3.12", "env/lib/", "env/lib/late.py", "env/lib/site.py", "env/lib64 -> lib"}},
		{"zip", spec.Zip, func(t *testing.T) []byte {
			return zipOf(t,
				zipEntry{Name: "models/"},
				zipEntry{Name: "models/v2.bin", Body: bytes.Repeat([]byte{1}, 1000)},
				zipEntry{Name: "models/latest", Body: []byte("v2.bin"), Mode: fs.ModeSymlink | 0o777},
				zipEntry{Name: "run.sh", Body: []byte("#!/bin/sh"), Mode: 0o755},
			)
		}, []string{"models/", "models/latest -> v2.bin", "models/v2.bin", "run.sh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, base, _, err := unpack(t, tc.kind, tc.data(t), 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if got := tree(t, out); !slices.Equal(got, tc.want) {
				t.Errorf("unpacked\n  %q\nwant\n  %q", got, tc.want)
			}
			if got := tree(t, filepath.Join(base, "deps")); got[0] != "out/" {
				t.Errorf("deps holds %q, want only out/", got)
			}
			info, err := os.Stat(out)
			if err != nil || info.Mode().Perm() != 0o755 {
				t.Errorf("out mode %v (%v), want 0755", info.Mode(), err)
			}
		})
	}
	// Modes: readable by all, executables kept, setuid dropped.
	out, _, _, err := unpack(t, spec.TarGz, tarGz(t, tarEntry{Name: "x", Body: "#!", Type: tar.TypeReg, Mode: 0o4700}, tarEntry{Name: "y", Type: tar.TypeReg, Mode: 0o600}), 100)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]fs.FileMode{"x": 0o744, "y": 0o644} {
		info, err := os.Lstat(filepath.Join(out, name))
		if err != nil || info.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", name, info.Mode(), err, want)
		}
	}
}

func TestExtractRefuses(t *testing.T) {
	zeros := make([]byte, 8<<20) // deflates to a few KiB
	for _, tc := range []struct {
		name string
		kind string
		data func(t *testing.T) []byte
		want string
	}{
		{"tar ../ entry", spec.TarGz, func(t *testing.T) []byte { return tarGz(t, file("ok", "1"), file("../evil", "x")) },
			`archive entry "../evil" contains .., which would leave the destination`},
		{"tar .. inside a path", spec.TarGz, func(t *testing.T) []byte { return tarGz(t, file("a/../../evil", "x")) },
			`archive entry "a/../../evil" contains ..`},
		{"tar absolute path", spec.TarGz, func(t *testing.T) []byte { return tarGz(t, file("/tmp/evil", "x")) },
			`archive entry "/tmp/evil" has an absolute path`},
		{"tar absolute symlink", spec.TarGz, func(t *testing.T) []byte { return tarGz(t, symlink("etc", "/etc"), file("etc/evil", "x")) },
			`archive entry "etc" is a symlink to "/etc", outside the destination`},
		{"tar relative symlink out", spec.TarGz, func(t *testing.T) []byte { return tarGz(t, symlink("a/up", "../../..")) },
			`archive entry "a/up" is a symlink to "../../..", outside the destination`},
		{"tar symlink out through another symlink", spec.TarGz, func(t *testing.T) []byte {
			return tarGz(t, symlink("a/b", ".."), symlink("a/b/c", ".."))
		}, `archive entry "c" is a symlink to "..", which resolves outside the destination`},
		{"tar file written through an escaping link", spec.TarGz, func(t *testing.T) []byte {
			return tarGz(t, symlink("a/b", ".."), symlink("a/b/c", ".."), file("a/b/c/evil", "x"))
		}, `archive entry "a/b/c/evil"`},
		{"tar dangling symlink", spec.TarGz, func(t *testing.T) []byte { return tarGz(t, symlink("x", "nowhere")) },
			`archive entry "x" is a symlink to "nowhere", which is not in the archive`},
		{"tar hard link out", spec.TarGz, func(t *testing.T) []byte { return tarGz(t, hardlink("passwd", "../../etc/passwd")) },
			`archive entry "passwd" is a hard link to "../../etc/passwd", outside the destination`},
		{"tar hard link to nothing", spec.TarGz, func(t *testing.T) []byte { return tarGz(t, hardlink("x", "y")) },
			`archive entry "x" is a hard link to "y", which is not a file unpacked before it`},
		{"tar device", spec.TarGz, func(t *testing.T) []byte { return tarGz(t, tarEntry{Name: "null", Type: tar.TypeChar}) },
			`archive entry "null" is a device, FIFO or other special file`},
		{"tar past the size limit", spec.TarGz, func(t *testing.T) []byte { return tarGz(t, file("a", "12345"), file("b", "67890")) },
			`the archive unpacks to more than the 8 B allowed (fetch.maxSize in the platform policy); refused at entry "b"`},
		{"not gzip", spec.TarGz, func(t *testing.T) []byte { return []byte("plain text") },
			`not a tar.gz file`},
		{"zip bomb", spec.Zip, func(t *testing.T) []byte { return zipOf(t, zipEntry{Name: "zeros", Body: zeros}) },
			`the archive declares 8.0 MiB unpacked, more than the 1.0 MiB allowed`},
		{"zip bomb with a lying header", spec.Zip, func(t *testing.T) []byte { return zipOf(t, zipEntry{Name: "zeros", Body: zeros, Size: 1000}) },
			`archive entry "zeros"`},
		{"zip ../ entry", spec.Zip, func(t *testing.T) []byte { return zipOf(t, zipEntry{Name: "../evil", Body: []byte("x")}) },
			`archive entry "../evil" contains ..`},
		{"zip backslashes", spec.Zip, func(t *testing.T) []byte { return zipOf(t, zipEntry{Name: `..\evil`, Body: []byte("x")}) },
			`uses \ in its path`},
		{"zip absolute symlink", spec.Zip, func(t *testing.T) []byte {
			return zipOf(t, zipEntry{Name: "etc", Body: []byte("/etc"), Mode: fs.ModeSymlink | 0o777})
		}, `archive entry "etc" is a symlink to "/etc", outside the destination`},
		{"not zip", spec.Zip, func(t *testing.T) []byte { return []byte("plain text") },
			`not a zip file`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			max := int64(1 << 20)
			if tc.name == "tar past the size limit" {
				max = 8
			}
			_, base, _, err := unpack(t, tc.kind, tc.data(t), max)
			wantError(t, err, tc.want)
			// Nothing left in deps, nothing written beside it.
			if got := tree(t, base); !slices.Equal(got, []string{"archive", "deps/"}) {
				t.Errorf("left behind: %q", got)
			}
		})
	}
}

// TestFetchAndUnpack goes through Run: the archive's digest is checked,
// it lands as a directory, and the Spark conf does not reference it.
func TestFetchAndUnpack(t *testing.T) {
	archive := tarGz(t, file("pyenv/bin/python", "#!"), file("pyenv/lib/a.py", "a"))
	bomb := zipOf(t, zipEntry{Name: "zeros", Body: make([]byte, 4<<20)})
	srv := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bomb.zip" {
			serveWhole(w, r, bomb)
			return
		}
		serveWhole(w, r, archive)
	})
	r := newRun(t, fmt.Sprintf("- url: %s/envs/pyenv.tar.gz\n  sha256: %q\n  extract: tar.gz\n", srv.URL, digest(archive)), spec.Policy{})
	if err := r.run(t); err != nil {
		t.Fatal(err)
	}
	want := []string{"pyenv/", "pyenv/pyenv/", "pyenv/pyenv/bin/", "pyenv/pyenv/bin/python", "pyenv/pyenv/lib/", "pyenv/pyenv/lib/a.py"}
	if got := r.contents(t); !slices.Equal(got, want) {
		t.Errorf("dest holds %q, want %q", got, want)
	}
	if l := r.logLines(t, "fetched and unpacked"); len(l) != 1 || l[0]["files"] != float64(2) {
		t.Errorf("log lines %v, want one with files: 2", l)
	}

	r = newRun(t, fmt.Sprintf("- url: %s/bomb.zip\n  extract: zip\n", srv.URL), spec.Policy{MaxSize: "1Mi"})
	wantError(t, r.run(t), srv.URL+"/bomb.zip: the archive declares 4.0 MiB unpacked, more than the 1.0 MiB allowed (fetch.maxSize in the platform policy)")
	if got := r.contents(t); len(got) != 0 {
		t.Errorf("dest holds %q after a refused archive, want nothing", got)
	}
}

func TestExtractStopsWhenTheContextEnds(t *testing.T) {
	base := t.TempDir()
	archive := filepath.Join(base, "a.tar.gz")
	if err := os.WriteFile(archive, tarGz(t, file("a", "1"), file("b", "2")), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := extract(ctx, archive, filepath.Join(base, "out"), spec.TarGz, 100); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	if got := tree(t, base); !slices.Equal(got, []string{"a.tar.gz"}) {
		t.Errorf("left behind: %q", got)
	}
}
