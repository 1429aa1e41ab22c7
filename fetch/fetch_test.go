package fetch

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

// setup writes the annotation and returns a config for it.
func setup(t *testing.T, annotation string, policies ...Policy) Config {
	t.Helper()
	dir := t.TempDir()
	ann := filepath.Join(dir, "fetch")
	if err := os.WriteFile(ann, []byte(annotation), 0o600); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "deps")
	if err := os.MkdirAll(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetOutput(io.Discard)
	return Config{AnnotationFile: ann, Dest: dest, Policies: policies, Retries: 3, Log: log.WithField("component", "init"), backoff: time.Millisecond}
}

// leftovers lists what is in dest.
func leftovers(t *testing.T, dest string) []string {
	var out []string
	_ = filepath.Walk(dest, func(p string, info os.FileInfo, err error) error {
		if err == nil && p != dest {
			rel, _ := filepath.Rel(dest, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

var payload = bytes.Repeat([]byte("spark-jar-bytes "), 4096)

func TestGoodFileWithChecksum(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(payload) }))
	defer srv.Close()
	cfg := setup(t, fmt.Sprintf("- url: %s/libs/udf.jar\n  sha256: %q\n", srv.URL, sum(payload)))
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(cfg.Dest, "udf.jar"))
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("udf.jar: %v, %d bytes", err, len(got))
	}
	if l := leftovers(t, cfg.Dest); len(l) != 1 {
		t.Errorf("dest holds %v, want only udf.jar", l)
	}
}

func TestWrongChecksumLeavesNothing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(payload) }))
	defer srv.Close()
	cfg := setup(t, fmt.Sprintf(`[{"url": "%s/a.jar", "sha256": "%s"}]`, srv.URL, strings.Repeat("0", 64)))
	err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "sha256 mismatch") || !strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("err = %v", err)
	}
	if l := leftovers(t, cfg.Dest); len(l) != 0 {
		t.Errorf("a bad download left %v", l)
	}
}

// dropper sends half the body, then cuts the connection; it honours Range.
func dropper(t *testing.T, honourRange bool, requests *atomic.Int32) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := requests.Add(1)
		start := 0
		if rg := r.Header.Get("Range"); rg != "" && honourRange {
			_, _ = fmt.Sscanf(rg, "bytes=%d-", &start)
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(payload)-1, len(payload)))
			w.Header().Set("Content-Length", fmt.Sprint(len(payload)-start))
			w.WriteHeader(http.StatusPartialContent)
		} else {
			w.Header().Set("Content-Length", fmt.Sprint(len(payload)))
		}
		if n == 1 { // the first answer stops halfway
			_, _ = w.Write(payload[start : len(payload)/2])
			hj, _ := w.(http.Hijacker)
			conn, _, _ := hj.Hijack()
			conn.Close()
			return
		}
		_, _ = w.Write(payload[start:])
	}))
}

func TestDroppedConnectionResumesWithRange(t *testing.T) {
	for _, honour := range []bool{true, false} {
		t.Run(fmt.Sprintf("range=%v", honour), func(t *testing.T) {
			var requests atomic.Int32
			srv := dropper(t, honour, &requests)
			defer srv.Close()
			cfg := setup(t, fmt.Sprintf("- {url: %s/x.jar, sha256: %q}", srv.URL, sum(payload)))
			if err := Run(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(filepath.Join(cfg.Dest, "x.jar"))
			if !bytes.Equal(got, payload) {
				t.Errorf("file differs after resume (%d bytes)", len(got))
			}
			if requests.Load() != 2 {
				t.Errorf("%d requests, want 2", requests.Load())
			}
		})
	}
}

func TestNotFoundIsClear(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	cfg := setup(t, srv.URL+"/missing.jar\n")
	err := Run(context.Background(), cfg)
	if err == nil || err.Error() != srv.URL+"/missing.jar: HTTP 404 Not Found" {
		t.Fatalf("err = %v", err)
	}
}

func TestTimeLimit(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = w.Write([]byte("slow"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	cfg := setup(t, srv.URL+"/slow.jar", Policy{Timeout: "200ms"})
	err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "time limit of 200ms") {
		t.Fatalf("err = %v", err)
	}
}

func tarGz(t *testing.T, add func(*tar.Writer)) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	add(tw)
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func serve(data []byte) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(data) }))
}

func TestArchives(t *testing.T) {
	file := func(tw *tar.Writer, name, body string) {
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte(body))
	}
	link := func(tw *tar.Writer, name, to string) {
		_ = tw.WriteHeader(&tar.Header{Name: name, Linkname: to, Typeflag: tar.TypeSymlink})
	}
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	w, _ := zw.Create("big.txt")
	_, _ = w.Write(bytes.Repeat([]byte{0}, 4<<20)) // compresses to a few KiB
	zw.Close()
	cases := []struct {
		name, kind, want string
		data             []byte
	}{
		{"good tar", "tar.gz", "", tarGz(t, func(tw *tar.Writer) { file(tw, "env/bin/python", "#!"); link(tw, "env/python", "bin/python") })},
		{"dot-dot entry", "tar.gz", "outside the destination", tarGz(t, func(tw *tar.Writer) { file(tw, "../../etc/cron.d/x", "boom") })},
		{"absolute symlink", "tar.gz", "outside the destination", tarGz(t, func(tw *tar.Writer) { link(tw, "passwd", "/etc/passwd") })},
		{"escaping symlink", "tar.gz", "outside the destination", tarGz(t, func(tw *tar.Writer) { link(tw, "a/up", "../../..") })},
		{"zip bomb", "zip", "fetch.maxSize", zbuf.Bytes()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(tc.data)
			defer srv.Close()
			cfg := setup(t, fmt.Sprintf("- {url: %s/pkg.%s, extract: %s}", srv.URL, tc.kind, tc.kind), Policy{MaxSize: "1Mi"})
			err := Run(context.Background(), cfg)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if target, err := os.Readlink(filepath.Join(cfg.Dest, "pkg", "env", "python")); err != nil || target != "bin/python" {
					t.Errorf("symlink inside the archive: %q %v", target, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if l := leftovers(t, cfg.Dest); len(l) != 0 {
				t.Errorf("a refused archive left %v", l)
			}
		})
	}
}

func TestInitRechecksThePolicy(t *testing.T) {
	cfg := setup(t, "https://evil.example.com/x.jar", Policy{AllowedURLPrefixes: []string{"https://repo.example.com/"}})
	err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "allows only URLs starting with https://repo.example.com/") {
		t.Fatalf("err = %v", err)
	}
}

func TestParseAnnotation(t *testing.T) {
	good := []struct {
		in   string
		want []Entry
	}{
		{"https://r.example.com/a.jar\n# comment\n\nhttps://r.example.com/b.py\n", []Entry{{URL: "https://r.example.com/a.jar", Dest: "a.jar"}, {URL: "https://r.example.com/b.py", Dest: "b.py"}}},
		{`[{"url":"http://r/x.tar.gz","extract":"tar.gz"}]`, []Entry{{URL: "http://r/x.tar.gz", Dest: "x", Extract: "tar.gz"}}},
		{"- url: https://r/y.zip\n  extract: zip\n  dest: venv\n", []Entry{{URL: "https://r/y.zip", Dest: "venv", Extract: "zip"}}},
	}
	for _, tc := range good {
		got, err := ParseAnnotation(tc.in)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%q: got %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	bad := []struct{ in, want string }{
		{"", "empty"},
		{"ftp://x/y.jar", "entry 1 (ftp://x/y.jar): url"},
		{"- {url: https://r/a.jar, sha256: abc}", `sha256 "abc" is not 64 hex digits`},
		{"- {url: https://r/a.jar, sha256: 1234}", "sha256 must be a quoted string"},
		{"- {url: https://r/a.jar, extract: rar}", `extract "rar"`},
		{"- {url: https://r/a.jar, dest: ../x}", "clean relative path"},
		{"- {url: https://r/a.jar, dest: /abs}", "clean relative path"},
		{"https://r/a.jar\nhttps://s/a.jar", "also used by entry 1"},
		{"- {url: https://r/a.jar, checksum: x}", "unknown field"},
		{"https://r/", "no file name"},
	}
	for _, tc := range bad {
		_, err := ParseAnnotation(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestPolicyCheckAndValidate(t *testing.T) {
	yes := true
	p := Policy{AllowedURLPrefixes: []string{"https://repo.example.com/"}, RequireSHA256: &yes}
	if err := p.Check([]Entry{{URL: "https://repo.example.com/a.jar"}}); err == nil || !strings.Contains(err.Error(), "requires a sha256") {
		t.Errorf("missing sha256: %v", err)
	}
	if err := p.Check([]Entry{{URL: "https://other.example.com/a.jar", SHA256: strings.Repeat("a", 64)}}); err == nil {
		t.Error("URL outside the allow-list passed")
	}
	if err := p.Check([]Entry{{URL: "https://repo.example.com/a.jar", SHA256: strings.Repeat("a", 64)}}); err != nil {
		t.Error(err)
	}
	err := Policy{MaxSize: "2GG", Timeout: "soon", AllowedURLPrefixes: []string{"repo"}}.Validate()
	for _, want := range []string{"fetch.maxSize", "fetch.timeout", "fetch.allowedURLPrefixes[0]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %s", err, want)
		}
	}
}

func TestSparkConf(t *testing.T) {
	got := SparkConf([]Entry{{Dest: "b.jar"}, {Dest: "a.jar"}, {Dest: "lib.py"}, {Dest: "data.csv"}, {Dest: "env", Extract: "zip"}})
	want := map[string]string{
		"spark.jars":           "file:///opt/sparklet/deps/a.jar,file:///opt/sparklet/deps/b.jar",
		"spark.submit.pyFiles": "file:///opt/sparklet/deps/lib.py",
		"spark.files":          "file:///opt/sparklet/deps/data.csv",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}
