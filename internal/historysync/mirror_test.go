package historysync_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/sparklet/sparklet/internal/eventlogs"
	"github.com/sparklet/sparklet/internal/historysync"
	"github.com/sparklet/sparklet/test/e2egate"
	"github.com/sparklet/sparklet/test/objectstore"
)

// tree is the mirror's files, hidden ones too, with their contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func quiet() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return logrus.NewEntry(l)
}

// TestMirrorVersityGW mirrors a real S3-compatible store as the sidecars
// fill it: a running application, its completion, its removal from the
// store; and a wrong bucket changes nothing.
func TestMirrorVersityGW(t *testing.T) {
	store, creds := objectstore.StartForTest(t, e2egate.BinDir(t, "to run versitygw"), "history")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s3, err := eventlogs.NewS3(eventlogs.S3Config{Endpoint: store.Endpoint, Bucket: "history", CredentialDir: creds})
	if err != nil {
		t.Fatal(err)
	}
	put := func(key, body string) {
		if err := s3.Put(ctx, key, strings.NewReader(body), int64(len(body))); err != nil {
			t.Fatal(err)
		}
	}
	const log = "eventlog_v2_spark-1/"
	put("prod/"+log+"appstatus_spark-1.inprogress", "")
	put("prod/"+log+"events_1_spark-1", "one\n")
	put("prod/"+log+"events_2_spark-1", "two\n")
	put("prod/spark-2", "single\n")
	put("prod/notes.md", "# any top-level name is a single-file log to Spark\n")
	put("prodx/spark-3", "another prefix\n")
	put("prod/.hidden", "skipped\n")

	dir := t.TempDir()
	stale := filepath.Join(dir, log, ".events_1_spark-1.sparklet-123")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("left by a killed process"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := &historysync.Mirror{Store: s3, Prefix: "prod", Dir: dir, Log: quiet()}
	st, err := m.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{log + "appstatus_spark-1.inprogress": "", log + "events_1_spark-1": "one\n", log + "events_2_spark-1": "two\n",
		"spark-2": "single\n", "notes.md": "# any top-level name is a single-file log to Spark\n"}
	if got := tree(t, dir); !reflect.DeepEqual(got, want) {
		t.Errorf("after the first pass the mirror holds %q, want %q", got, want)
	}
	if st.Downloaded != 5 || st.Skipped != 1 {
		t.Errorf("first pass %+v, want 5 downloaded and 1 skipped", st)
	}
	objects, err := store.List(ctx, "history", "prod/"+log+"events_1")
	if err != nil || len(objects) != 1 {
		t.Fatal(objects, err)
	}
	fi, err := os.Stat(filepath.Join(dir, log, "events_1_spark-1"))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("events_1: %v %v, want mode 0644 so that the history server's user reads it", fi, err)
	}

	// Nothing changed: nothing downloaded.
	if st, err := m.Pass(ctx); err != nil || st.Downloaded != 0 || st.Removed != 0 {
		t.Errorf("a pass over an unchanged store: %+v, %v; want nothing done", st, err)
	}

	// The application completes, as the sidecar ships it.
	put("prod/"+log+"events_2_spark-1", "two\nend\n")
	put("prod/"+log+"appstatus_spark-1", "")
	if err := s3.Delete(ctx, "prod/"+log+"appstatus_spark-1.inprogress"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	want[log+"events_2_spark-1"] = "two\nend\n"
	want[log+"appstatus_spark-1"] = ""
	delete(want, log+"appstatus_spark-1.inprogress")
	if got := tree(t, dir); !reflect.DeepEqual(got, want) {
		t.Errorf("after completion the mirror holds %q, want %q", got, want)
	}

	// A wrong bucket: refused for good, and the mirror stays as it was.
	wrong, err := eventlogs.NewS3(eventlogs.S3Config{Endpoint: store.Endpoint, Bucket: "nope", CredentialDir: creds})
	if err != nil {
		t.Fatal(err)
	}
	bad := &historysync.Mirror{Store: wrong, Prefix: "prod", Dir: dir, Log: quiet()}
	if _, err := bad.Pass(ctx); !errors.Is(err, eventlogs.ErrPermanent) {
		t.Errorf("a pass over a missing bucket: %v, want an ErrPermanent", err)
	}
	if got := tree(t, dir); !reflect.DeepEqual(got, want) {
		t.Errorf("a failed listing changed the mirror: %q", got)
	}

	// The application's log is removed from the store, and from the mirror.
	for _, k := range []string{log + "appstatus_spark-1", log + "events_1_spark-1", log + "events_2_spark-1"} {
		if err := s3.Delete(ctx, "prod/"+k); err != nil {
			t.Fatal(err)
		}
		delete(want, k)
	}
	if st, err := m.Pass(ctx); err != nil || st.Removed != 3 {
		t.Errorf("pass after the removal: %+v, %v", st, err)
	}
	if got := tree(t, dir); !reflect.DeepEqual(got, want) {
		t.Errorf("after the removal the mirror holds %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, log)); !os.IsNotExist(err) {
		t.Errorf("the rolling log's empty directory is left: %v", err)
	}
}

// flaky is a store whose listing fails while down, and whose Get of a key
// in failGet returns a truncated body.
type flaky struct {
	down    bool
	objects map[string]string
	failGet map[string]bool
	mod     time.Time
}

func (f *flaky) List(context.Context, string) ([]eventlogs.Object, error) {
	if f.down {
		return nil, errors.New("503 SlowDown")
	}
	var out []eventlogs.Object
	for k, v := range f.objects {
		out = append(out, eventlogs.Object{Key: k, Size: int64(len(v)), Modified: f.mod})
	}
	return out, nil
}

func (f *flaky) Get(_ context.Context, key string) (io.ReadCloser, error) {
	body := f.objects[key]
	if f.failGet[key] {
		body = body[:1]
	}
	return io.NopCloser(bytes.NewReader([]byte(body))), nil
}

// TestMirrorFailures: a failed listing removes nothing; a download cut
// short leaves neither a partial file nor a temporary one, and the next
// pass gets it.
func TestMirrorFailures(t *testing.T) {
	dir := t.TempDir()
	store := &flaky{objects: map[string]string{"spark-1": "complete\n", "spark-2": "cut short\n"}, failGet: map[string]bool{"spark-2": true}, mod: time.Now()}
	m := &historysync.Mirror{Store: store, Dir: dir, Log: quiet()}
	if _, err := m.Pass(context.Background()); err == nil || !strings.Contains(err.Error(), "spark-2") {
		t.Errorf("a pass with a short download: %v, want an error naming spark-2", err)
	}
	if got, want := tree(t, dir), map[string]string{"spark-1": "complete\n"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after a short download the mirror holds %q, want %q", got, want)
	}
	store.down = true
	if _, err := m.Pass(context.Background()); err == nil {
		t.Error("a pass over a store that is down: no error")
	}
	if got := tree(t, dir); len(got) != 1 {
		t.Errorf("a failed listing changed the mirror: %q", got)
	}
	store.down, store.failGet = false, nil
	if st, err := m.Pass(context.Background()); err != nil || st.Downloaded != 1 {
		t.Errorf("the next pass: %+v, %v; want spark-2 downloaded", st, err)
	}
	if got, want := tree(t, dir), map[string]string{"spark-1": "complete\n", "spark-2": "cut short\n"}; !reflect.DeepEqual(got, want) {
		t.Errorf("mirror holds %q, want %q", got, want)
	}
}
