package fetch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/sparklet/sparklet/fetch/spec"
)

func digest(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

func ptr[T any](v T) *T { return &v }

// payload is 1 MiB that does not repeat with a short period, so a resume
// at the wrong offset changes the digest.
var payload = func() []byte {
	b := make([]byte, 1<<20)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}()

// server records the requests it saw; its handler gets the request number.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func newServer(t *testing.T, h func(n int, w http.ResponseWriter, r *http.Request)) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(context.Background()))
		n := len(s.reqs)
		s.mu.Unlock()
		h(n, w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// serveWhole answers with the whole payload, honouring Range and If-Range.
func serveWhole(w http.ResponseWriter, r *http.Request, data []byte) {
	w.Header().Set("ETag", `"v1"`)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

// dropHalf promises the whole payload, sends half, and breaks the connection.
func dropHalf(w http.ResponseWriter, data []byte) {
	w.Header().Set("ETag", `"v1"`)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	_, _ = w.Write(data[:len(data)/2])
	w.(http.Flusher).Flush()
	panic(http.ErrAbortHandler)
}

// run is one `sparklet init` run over an annotation in a fresh directory.
type run struct {
	cfg  Config
	logs *bytes.Buffer
}

func newRun(t *testing.T, annotation string, p spec.Policy) *run {
	t.Helper()
	dir := t.TempDir()
	ann := filepath.Join(dir, "podinfo-fetch")
	if err := os.WriteFile(ann, []byte(annotation), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	l := logrus.New()
	l.SetOutput(logs)
	l.SetFormatter(&logrus.JSONFormatter{})
	return &run{logs: logs, cfg: Config{
		AnnotationFile: ann,
		Dest:           filepath.Join(dir, "deps"),
		Policy:         p,
		Retries:        3,
		Backoff:        time.Millisecond,
		MaxBackoff:     4 * time.Millisecond,
		Log:            l.WithField("component", "init"),
	}}
}

func (r *run) run(t *testing.T) error {
	t.Helper()
	return Run(context.Background(), r.cfg)
}

// contents lists every path under dest, directories with a trailing /.
func (r *run) contents(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(r.cfg.Dest, func(p string, info os.FileInfo, err error) error {
		if err != nil || p == r.cfg.Dest {
			return err
		}
		rel, _ := filepath.Rel(r.cfg.Dest, p)
		if info.IsDir() {
			rel += "/"
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// logLines decodes the JSON log lines with the given msg.
func (r *run) logLines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(r.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if m["component"] != "init" {
			t.Errorf("log line %q lacks component=init", line)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func wantFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes with sha256 %s, want %d bytes with %s", path, len(got), digest(got), len(want), digest(want))
	}
}

func wantError(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error\n  %v\nwant it to contain\n  %s", err, p)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error spans lines: %q", err)
	}
}

func TestGoodFile(t *testing.T) {
	srv := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request) { serveWhole(w, r, payload) })
	r := newRun(t, fmt.Sprintf("- url: %s/libs/udfs.jar\n  sha256: %q\n", srv.URL, strings.ToUpper(digest(payload))), spec.Policy{})
	r.cfg.ProgressEvery = time.Nanosecond
	if err := r.run(t); err != nil {
		t.Fatal(err)
	}
	wantFile(t, filepath.Join(r.cfg.Dest, "udfs.jar"), payload)
	if got := r.contents(t); !slices.Equal(got, []string{"udfs.jar"}) {
		t.Errorf("dest holds %v, want only udfs.jar", got)
	}
	info, err := os.Stat(filepath.Join(r.cfg.Dest, "udfs.jar"))
	if err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("udfs.jar mode %v (%v), want 0644 so the Spark container's user can read it", info.Mode(), err)
	}
	reqs := srv.requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Accept-Encoding") != "identity" {
		t.Errorf("requests %d, Accept-Encoding %q; want one request for the exact bytes", len(reqs), reqs[0].Header.Get("Accept-Encoding"))
	}
	done := r.logLines(t, "fetched")
	if len(done) != 1 || done[0]["bytes"] != float64(len(payload)) || done[0]["bytesPerSecond"] == nil || done[0]["sha256"] != digest(payload) {
		t.Errorf("fetched log lines %v, want one with bytes, bytesPerSecond and sha256", done)
	}
	if p := r.logLines(t, "downloading"); len(p) == 0 || p[0]["bytes"] == nil || p[0]["totalBytes"] != float64(len(payload)) {
		t.Errorf("progress lines %v, want bytes and totalBytes", p)
	}
}

func TestRestartedInitKeepsPinnedFiles(t *testing.T) {
	srv := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request) { serveWhole(w, r, payload) })
	r := newRun(t, fmt.Sprintf("- url: %s/a.jar\n  sha256: %q\n- %s/b.txt\n", srv.URL, digest(payload), srv.URL), spec.Policy{})
	if err := os.MkdirAll(r.cfg.Dest, 0o755); err != nil {
		t.Fatal(err)
	}
	// What a killed run leaves: a finished pinned file, a partial download.
	for name, data := range map[string][]byte{"a.jar": payload, partPrefix + "123": payload[:10]} {
		if err := os.WriteFile(filepath.Join(r.cfg.Dest, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.run(t); err != nil {
		t.Fatal(err)
	}
	if reqs := srv.requests(); len(reqs) != 1 || reqs[0].URL.Path != "/b.txt" {
		t.Errorf("%d requests, want only b.txt fetched: a.jar was in place with its digest", len(reqs))
	}
	if got := r.contents(t); !slices.Equal(got, []string{"a.jar", "b.txt"}) {
		t.Errorf("dest holds %v, want a.jar and b.txt and no partial file", got)
	}
}

func TestWrongChecksumLeavesNothing(t *testing.T) {
	srv := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request) { serveWhole(w, r, payload) })
	wrong := strings.Repeat("0", 64)
	r := newRun(t, fmt.Sprintf(`[{"url": "%s/lib/a.jar", "sha256": "%s", "dest": "lib/a.jar"}]`, srv.URL, wrong), spec.Policy{})
	err := r.run(t)
	wantError(t, err, srv.URL+"/lib/a.jar: sha256 mismatch: the annotation pins "+wrong+" but the 1.0 MiB downloaded hash to "+digest(payload)+"; nothing was kept")
	if got := r.contents(t); !slices.Equal(got, []string{"lib/"}) {
		t.Errorf("dest holds %v, want only the empty lib/", got)
	}
}

func TestInterruptedDownloads(t *testing.T) {
	for _, tc := range []struct {
		name     string
		handler  func(n int, w http.ResponseWriter, r *http.Request)
		requests int
		// wantRange is the Range header of the second request.
		wantRange string
		logMsg    string
	}{
		{"resumed with Range", func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				dropHalf(w, payload)
			}
			serveWhole(w, r, payload)
		}, 2, fmt.Sprintf("bytes=%d-", len(payload)/2), "resuming"},
		{"server ignores Range", func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				dropHalf(w, payload)
			}
			_, _ = w.Write(payload)
		}, 2, fmt.Sprintf("bytes=%d-", len(payload)/2), "the server sent the whole file instead of the rest; starting over"},
		{"resumed at the wrong offset", func(n int, w http.ResponseWriter, r *http.Request) {
			switch n {
			case 1:
				dropHalf(w, payload)
			case 2:
				w.Header().Set("Content-Range", fmt.Sprintf("bytes 10-%d/%d", len(payload)-1, len(payload)))
				w.WriteHeader(http.StatusPartialContent)
				_, _ = w.Write(payload[10:])
			default:
				serveWhole(w, r, payload)
			}
		}, 3, fmt.Sprintf("bytes=%d-", len(payload)/2), "retrying"},
		{"dropped twice, resumed twice", func(n int, w http.ResponseWriter, r *http.Request) {
			switch n {
			case 1:
				dropHalf(w, payload)
			case 2:
				w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", len(payload)/2, len(payload)-1, len(payload)))
				w.Header().Set("Content-Length", strconv.Itoa(len(payload)-len(payload)/2))
				w.WriteHeader(http.StatusPartialContent)
				_, _ = w.Write(payload[len(payload)/2 : len(payload)*3/4])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			default:
				serveWhole(w, r, payload)
			}
		}, 3, fmt.Sprintf("bytes=%d-", len(payload)/2), "resuming"},
		{"503 then the file", func(n int, w http.ResponseWriter, r *http.Request) {
			if n < 3 {
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return
			}
			serveWhole(w, r, payload)
		}, 3, "", "retrying"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.handler)
			r := newRun(t, fmt.Sprintf("- url: %s/a.jar\n  sha256: %q\n", srv.URL, digest(payload)), spec.Policy{})
			if err := r.run(t); err != nil {
				t.Fatal(err)
			}
			wantFile(t, filepath.Join(r.cfg.Dest, "a.jar"), payload)
			if got := r.contents(t); !slices.Equal(got, []string{"a.jar"}) {
				t.Errorf("dest holds %v, want only a.jar", got)
			}
			reqs := srv.requests()
			if len(reqs) != tc.requests {
				t.Fatalf("%d requests, want %d", len(reqs), tc.requests)
			}
			if got := reqs[1].Header.Get("Range"); got != tc.wantRange {
				t.Errorf("second request Range %q, want %q", got, tc.wantRange)
			}
			if tc.wantRange != "" && reqs[1].Header.Get("If-Range") != `"v1"` {
				t.Errorf("second request If-Range %q, want the ETag", reqs[1].Header.Get("If-Range"))
			}
			if len(r.logLines(t, tc.logMsg)) == 0 {
				t.Errorf("no %q log line in\n%s", tc.logMsg, r.logs)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	chunked := func(_ int, w http.ResponseWriter, _ *http.Request) {
		for range 4 {
			_, _ = w.Write(payload[:1000])
			w.(http.Flusher).Flush()
		}
	}
	for _, tc := range []struct {
		name     string
		handler  func(n int, w http.ResponseWriter, r *http.Request)
		policy   spec.Policy
		requests int
		want     string // after "<url>: "
	}{
		{"404", func(_ int, w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) },
			spec.Policy{}, 1, "HTTP 404 Not Found"},
		{"403 is not retried", func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) },
			spec.Policy{}, 1, "HTTP 403 Forbidden; sparklet init sends no credentials, so the file must be readable without them"},
		{"500 until the retries run out", func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) },
			spec.Policy{}, 4, "gave up after 4 failed attempts in a row: HTTP 500 Internal Server Error"},
		{"Content-Length over maxSize", func(_ int, w http.ResponseWriter, r *http.Request) { serveWhole(w, r, payload) },
			spec.Policy{MaxSize: "100Ki"}, 1, "the file is 1.0 MiB, more than the 100.0 KiB allowed (fetch.maxSize in the platform policy)"},
		{"chunked past maxSize", chunked,
			spec.Policy{MaxSize: "3000"}, 1, "the download passed the 2.9 KiB allowed (fetch.maxSize in the platform policy)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.handler)
			r := newRun(t, srv.URL+"/libs/a.jar", tc.policy)
			wantError(t, r.run(t), srv.URL+"/libs/a.jar: "+tc.want)
			if n := len(srv.requests()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			if got := r.contents(t); len(got) != 0 {
				t.Errorf("dest holds %v, want nothing", got)
			}
		})
	}
}

func TestTimeLimit(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(payload)))
		_, _ = w.Write(payload[:4096])
		w.(http.Flusher).Flush()
		select { // stalls until the client gives up
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	r := newRun(t, srv.URL+"/slow.jar", spec.Policy{Timeout: "300ms"})
	wantError(t, r.run(t), srv.URL+"/slow.jar: not finished within the time limit of 300ms (fetch.timeout in the platform policy); 4.0 KiB of it had arrived")
	if got := r.contents(t); len(got) != 0 {
		t.Errorf("dest holds %v, want nothing", got)
	}
}

func TestInitChecksThePolicyAgain(t *testing.T) {
	srv := newServer(t, func(_ int, w http.ResponseWriter, r *http.Request) { serveWhole(w, r, payload) })
	for _, tc := range []struct {
		name   string
		policy spec.Policy
		want   string
	}{
		{"sha256 required", spec.Policy{RequireSHA256: ptr(true)}, "the platform policy (fetch.requireSHA256) requires a sha256"},
		{"outside the allow-list", spec.Policy{AllowedURLPrefixes: []string{"https://repo.example.com/"}}, "the platform policy (fetch.allowedURLPrefixes) allows only URLs starting with https://repo.example.com/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRun(t, srv.URL+"/a.jar", tc.policy)
			wantError(t, r.run(t), "sparklet.io/fetch entry 1 ("+srv.URL+"/a.jar): "+tc.want)
		})
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests, want none: the policy refuses before downloading", n)
	}
}

func TestBadAnnotationFile(t *testing.T) {
	r := newRun(t, "ftp://h/a.jar", spec.Policy{})
	wantError(t, r.run(t), `sparklet.io/fetch entry 1 (ftp://h/a.jar): url "ftp://h/a.jar": the scheme must be http or https`)
	r.cfg.AnnotationFile = filepath.Join(t.TempDir(), "missing")
	wantError(t, r.run(t), "read the sparklet.io/fetch annotation: open "+r.cfg.AnnotationFile)
}

func TestTerminationMessage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "termination-log")
	long := strings.Repeat("x", 5000)
	if err := WriteTerminationMessage(path, fmt.Errorf("first\nsecond  %s", long)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got), "first; second xxx") || strings.Count(string(got), "\n") != 1 || len(got) > TerminationMessageLimit+1 {
		t.Errorf("termination message %.40q... (%d bytes), want one line within %d bytes", got, len(got), TerminationMessageLimit)
	}
	if err := WriteTerminationMessage(filepath.Join(path, "not-a-dir", "x"), fmt.Errorf("e")); err == nil {
		t.Error("writing below a file succeeded")
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{AnnotationFile: "/etc/sparklet/podinfo/fetch", Dest: spec.MountPath, Retries: 4}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"good", func(*Config) {}, ""},
		{"no annotation file", func(c *Config) { c.AnnotationFile = "" }, "--annotation-file is required"},
		{"relative dest", func(c *Config) { c.Dest = "deps" }, `--dest "deps" must be an absolute directory, normally /opt/sparklet/deps`},
		{"negative retries", func(c *Config) { c.Retries = -1 }, "--retries -1 must be 0 or more"},
		{"bad size", func(c *Config) { c.Policy.MaxSize = "2GG" }, `SPARKLET_FETCH_POLICY: fetch.maxSize: "2GG" is not a quantity; write for example 500Mi or 2Gi`},
		{"bad timeout", func(c *Config) { c.Policy.Timeout = "10" }, `SPARKLET_FETCH_POLICY: fetch.timeout: "10" is not a duration`},
		{"bad prefix", func(c *Config) { c.Policy.AllowedURLPrefixes = []string{"repo/"} }, `SPARKLET_FETCH_POLICY: fetch.allowedURLPrefixes[0]: "repo/" must start with http:// or https://`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			wantError(t, err, tc.want)
		})
	}
}
