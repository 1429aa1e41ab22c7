package eventlogs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tree lists every file under root with its content and mode, hidden ones
// included.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = fi.Mode().Perm().String() + " " + string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The shipper into a directory follows Spark's rolling writer as it
// follows it into a bucket: the same keys as paths under the root, the
// files readable by a history server of another user, nothing hidden
// left, the in-progress status gone once the complete one is there.
func TestDirFollowsRollingLog(t *testing.T) {
	src, root := t.TempDir(), t.TempDir()
	s := newShipper(src, Dir{Root: root})
	const log = "eventlog_v2_spark-1/"
	write(t, src, log+"appstatus_spark-1.inprogress", "")
	write(t, src, log+"events_1_spark-1", "one\n")
	write(t, src, log+"events_2_spark-1", "two")
	if err := s.pass(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"logs/prod/" + log + "appstatus_spark-1.inprogress": "-rw-r--r-- ", "logs/prod/" + log + "events_1_spark-1": "-rw-r--r-- one\n"}
	if got := tree(t, root); !reflect.DeepEqual(got, want) {
		t.Errorf("while running the directory holds %q, want %q", got, want)
	}
	write(t, src, log+"events_2_spark-1", "two\n{\"Event\":\"SparkListenerApplicationEnd\"}\n")
	if err := os.Rename(filepath.Join(src, log+"appstatus_spark-1.inprogress"), filepath.Join(src, log+"appstatus_spark-1")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"logs/prod/" + log + "appstatus_spark-1": "-rw-r--r-- ", "logs/prod/" + log + "events_1_spark-1": "-rw-r--r-- one\n",
		"logs/prod/" + log + "events_2_spark-1": "-rw-r--r-- two\n{\"Event\":\"SparkListenerApplicationEnd\"}\n"}
	if got := tree(t, root); !reflect.DeepEqual(got, want) {
		t.Errorf("once stopped the directory holds %q, want %q", got, want)
	}
	if fi, err := os.Stat(filepath.Join(root, "logs/prod", log)); err != nil || fi.Mode().Perm()&0o005 != 0o005 {
		t.Errorf("the log's directory: %v %v, want others to read and enter it", fi.Mode(), err)
	}
}

// A file written again replaces the old one whole, and the temporary
// files an earlier writer left (a sidecar killed mid-write) go; a body
// shorter than its size leaves the old file and no temporary one.
func TestDirPutReplacesWhole(t *testing.T) {
	root := t.TempDir()
	d := Dir{Root: root}
	ctx := context.Background()
	write(t, root, "eventlog_v2_a/.events_1_a"+TempMark+"123", "half")
	if err := d.Put(ctx, "eventlog_v2_a/events_1_a", strings.NewReader("old"), 3); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(ctx, "eventlog_v2_a/events_1_a", strings.NewReader("new!"), 5); err == nil {
		t.Error("a body shorter than its size was written")
	}
	if err := d.Put(ctx, "eventlog_v2_a/events_1_a", strings.NewReader("newer"), 5); err != nil {
		t.Fatal(err)
	}
	if got, want := tree(t, root), map[string]string{"eventlog_v2_a/events_1_a": "-rw-r--r-- newer"}; !reflect.DeepEqual(got, want) {
		t.Errorf("the directory holds %q, want %q", got, want)
	}
	if err := d.Delete(ctx, "eventlog_v2_a/events_1_a"); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, "eventlog_v2_a/events_1_a"); err != nil {
		t.Errorf("deleting a missing file: %v, want no error", err)
	}
}

// Keys that would leave the root, and errors no retry cures, are
// permanent: Finish gives up on them at once.
func TestDirPermanentErrors(t *testing.T) {
	d := Dir{Root: t.TempDir()}
	for _, key := range []string{"../x", "/etc/x", "a/../../x"} {
		if err := d.Put(context.Background(), key, strings.NewReader(""), 0); !errors.Is(err, ErrPermanent) {
			t.Errorf("Put %q = %v, want an ErrPermanent", key, err)
		}
	}
	for _, errno := range []syscall.Errno{syscall.EACCES, syscall.EPERM, syscall.EROFS} {
		if err := permanentFS(&fs.PathError{Op: "open", Path: "/x", Err: errno}); !errors.Is(err, ErrPermanent) {
			t.Errorf("%v: %v, want an ErrPermanent", errno, err)
		}
	}
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO} {
		if err := permanentFS(&fs.PathError{Op: "write", Path: "/x", Err: errno}); errors.Is(err, ErrPermanent) {
			t.Errorf("%v: %v, want it retried", errno, err)
		}
	}
	// A root that is a file: every Put fails, and is retried.
	file := filepath.Join(t.TempDir(), "file")
	write(t, filepath.Dir(file), "file", "")
	src := t.TempDir()
	write(t, src, "spark-1", "x")
	s := newShipper(src, Dir{Root: file})
	var failed []string
	s.Failed = func(key string, _ error) { failed = append(failed, key) }
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := s.Finish(ctx); err == nil || errors.Is(err, ErrPermanent) {
		t.Errorf("Finish into a file = %v, want a transient error retried until the deadline", err)
	}
	if len(failed) < 2 || slices.ContainsFunc(failed, func(k string) bool { return k != "logs/prod/spark-1" }) {
		t.Errorf("failures %q, want logs/prod/spark-1 retried", failed)
	}
}
