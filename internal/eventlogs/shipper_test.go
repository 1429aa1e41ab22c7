package eventlogs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// memStore is a store in memory that fails the first fails[key] puts of a
// key.
type memStore struct {
	mu      sync.Mutex
	objects map[string]string
	puts    []string
	fails   map[string]int
}

func (m *memStore) Put(_ context.Context, key string, body io.Reader, size int64) error {
	b, err := io.ReadAll(body)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts = append(m.puts, key)
	if m.fails[key] > 0 {
		m.fails[key]--
		return errors.New("503 SlowDown")
	}
	if int64(len(b)) != size {
		return errors.New("short body")
	}
	m.objects[key] = string(b)
	return nil
}

func (m *memStore) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, key)
	return nil
}

func (m *memStore) keys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.objects {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newShipper(dir string, store Store) *Shipper {
	return &Shipper{Dir: dir, Prefix: "logs/prod", Store: store, Interval: 10 * time.Millisecond, Backoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond}
}

// The steps of Spark's rolling writer (RollingEventLogFilesWriter), with
// what the store must hold after each.
func TestShipperFollowsRollingLog(t *testing.T) {
	dir := t.TempDir()
	store := &memStore{objects: map[string]string{}}
	s := newShipper(dir, store)
	const log = "eventlog_v2_spark-1/"
	steps := []struct {
		name   string
		change func()
		final  bool
		want   []string
	}{
		{"started", func() {
			write(t, dir, log+"appstatus_spark-1.inprogress", "")
			write(t, dir, log+"events_1_spark-1.zstd", "a")
		}, false, []string{"logs/prod/" + log + "appstatus_spark-1.inprogress"}},
		{"rolled twice", func() {
			write(t, dir, log+"events_2_spark-1.zstd", "b")
			write(t, dir, log+"events_10_spark-1.zstd", "c")
		}, false, []string{"logs/prod/" + log + "appstatus_spark-1.inprogress", "logs/prod/" + log + "events_1_spark-1.zstd", "logs/prod/" + log + "events_2_spark-1.zstd"}},
		{"stopped", func() {
			if err := os.Rename(filepath.Join(dir, log+"appstatus_spark-1.inprogress"), filepath.Join(dir, log+"appstatus_spark-1")); err != nil {
				t.Fatal(err)
			}
		}, false, []string{"logs/prod/" + log + "appstatus_spark-1", "logs/prod/" + log + "events_10_spark-1.zstd", "logs/prod/" + log + "events_1_spark-1.zstd", "logs/prod/" + log + "events_2_spark-1.zstd"}},
	}
	for _, st := range steps {
		st.change()
		if err := s.pass(context.Background(), st.final); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := store.keys(); !reflect.DeepEqual(got, st.want) {
			t.Errorf("%s: store holds %q, want %q", st.name, got, st.want)
		}
	}
	// The complete status went in after the last event file.
	if i, j := slices.Index(store.puts, "logs/prod/"+log+"events_10_spark-1.zstd"), slices.Index(store.puts, "logs/prod/"+log+"appstatus_spark-1"); i < 0 || j < i {
		t.Errorf("puts %q: the complete app status must follow the last event file", store.puts)
	}
}

// A JVM killed mid-write leaves its in-progress status and last event
// file; Finish ships them as they are, and a single-file log too.
func TestShipperFinishAfterKill(t *testing.T) {
	dir := t.TempDir()
	store := &memStore{objects: map[string]string{}}
	s := newShipper(dir, store)
	write(t, dir, "eventlog_v2_spark-2/appstatus_spark-2.inprogress", "")
	write(t, dir, "eventlog_v2_spark-2/events_1_spark-2", "x")
	write(t, dir, "eventlog_v2_spark-2/events_2_spark-2", "{\"Event\":\"SparkListenerJobStart\"")
	write(t, dir, "spark-3.inprogress", "y")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"logs/prod/eventlog_v2_spark-2/appstatus_spark-2.inprogress", "logs/prod/eventlog_v2_spark-2/events_1_spark-2",
		"logs/prod/eventlog_v2_spark-2/events_2_spark-2", "logs/prod/spark-3.inprogress"}
	if got := store.keys(); !reflect.DeepEqual(got, want) {
		t.Errorf("store holds %q, want %q", got, want)
	}
	if got := store.objects["logs/prod/eventlog_v2_spark-2/events_2_spark-2"]; got != "{\"Event\":\"SparkListenerJobStart\"" {
		t.Errorf("last event file = %q", got)
	}
}

// Failed uploads are retried with backoff, and a complete status waits
// for the event file before it.
func TestShipperRetries(t *testing.T) {
	dir := t.TempDir()
	const last = "logs/prod/eventlog_v2_spark-4/events_1_spark-4"
	store := &memStore{objects: map[string]string{}, fails: map[string]int{last: 3}}
	s := newShipper(dir, store)
	var failures int
	s.Failed = func(string, error) { failures++ }
	write(t, dir, "eventlog_v2_spark-4/events_1_spark-4", "x")
	write(t, dir, "eventlog_v2_spark-4/appstatus_spark-4", "")
	if err := s.pass(context.Background(), false); err == nil {
		t.Fatal("the first pass met a failing store and said nothing")
	}
	if got := store.keys(); len(got) != 0 {
		t.Errorf("after a failed event file the store holds %q, want nothing: the complete status must wait", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := store.keys(), []string{"logs/prod/eventlog_v2_spark-4/appstatus_spark-4", last}; !reflect.DeepEqual(got, want) {
		t.Errorf("store holds %q, want %q", got, want)
	}
	if failures != 3 {
		t.Errorf("%d failures reported, want 3", failures)
	}
}

// A prefix written with slashes gives the keys the bare prefix gives.
func TestShipperKeyTrimsSlashes(t *testing.T) {
	for _, prefix := range []string{"logs/prod", "logs/prod/", "/logs/prod/"} {
		s := &Shipper{Prefix: prefix}
		if got := s.key("eventlog_v2_a/events_1_a"); got != "logs/prod/eventlog_v2_a/events_1_a" {
			t.Errorf("prefix %q: key %q, want logs/prod/eventlog_v2_a/events_1_a", prefix, got)
		}
	}
	if got := (&Shipper{Prefix: "/"}).key("a"); got != "a" {
		t.Errorf(`prefix "/": key %q, want "a"`, got)
	}
}

// A directory the shipper cannot read is reported once per error, not on
// every pass, and again after it was readable in between.
func TestShipperReportsUnreadableDir(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "events")
	// A file where the directory should be: unreadable as a directory
	// even for root, who reads any mode.
	write(t, parent, "events", "not a directory")
	s := newShipper(dir, &memStore{objects: map[string]string{}})
	var reports []string
	s.Unreadable = func(err error) { reports = append(reports, err.Error()) }
	for range 3 {
		if err := s.pass(context.Background(), false); err == nil {
			t.Fatal("a pass over a file as the directory said nothing")
		}
	}
	if len(reports) != 1 || !strings.Contains(reports[0], dir) {
		t.Fatalf("reports %q, want one naming %s", reports, dir)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "eventlog_v2_spark-6/appstatus_spark-6.inprogress", "")
	if err := s.pass(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	write(t, parent, "events", "not a directory again")
	_ = s.pass(context.Background(), false)
	if len(reports) != 2 {
		t.Errorf("reports %q, want a second once the directory was readable in between", reports)
	}
}

// Run ships a rolled file without being told, and stops with its context.
func TestShipperRunShipsRolledFiles(t *testing.T) {
	dir := t.TempDir()
	store := &memStore{objects: map[string]string{}}
	s := newShipper(dir, store)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	write(t, dir, "eventlog_v2_spark-5/events_1_spark-5", "x")
	write(t, dir, "eventlog_v2_spark-5/events_2_spark-5", "y")
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(store.keys(), "logs/prod/eventlog_v2_spark-5/events_1_spark-5") {
		if time.Now().After(deadline) {
			t.Fatalf("events_1 not shipped within 10 s: %q", store.keys())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if slices.Contains(store.keys(), "logs/prod/eventlog_v2_spark-5/events_2_spark-5") {
		t.Errorf("the file the JVM still writes was shipped")
	}
}

// A sidecar restarted after the JVM's log was shipped as in progress still
// drops that status once the complete one is in.
func TestShipperRestartedDropsStaleStatus(t *testing.T) {
	dir := t.TempDir()
	stale := "logs/prod/eventlog_v2_spark-6/appstatus_spark-6.inprogress"
	store := &memStore{objects: map[string]string{stale: ""}}
	write(t, dir, "eventlog_v2_spark-6/events_1_spark-6", "x")
	write(t, dir, "eventlog_v2_spark-6/appstatus_spark-6", "")
	if err := newShipper(dir, store).pass(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if got, want := store.keys(), []string{"logs/prod/eventlog_v2_spark-6/appstatus_spark-6", "logs/prod/eventlog_v2_spark-6/events_1_spark-6"}; !reflect.DeepEqual(got, want) {
		t.Errorf("store holds %q, want %q", got, want)
	}
}

// Finish gives up at once on errors retrying will not cure.
func TestShipperFinishGivesUpOnPermanentErrors(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "eventlog_v2_spark-7/events_1_spark-7", "x")
	s := newShipper(dir, refusing{})
	s.MaxBackoff = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Finish(ctx); !errors.Is(err, ErrPermanent) {
		t.Fatalf("Finish = %v, want an ErrPermanent", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Finish took %v on a refused credential, want it to give up at once", took)
	}
}

type refusing struct{}

func (refusing) Put(context.Context, string, io.Reader, int64) error {
	return fmt.Errorf("%w: AccessDenied", ErrPermanent)
}
func (refusing) Delete(context.Context, string) error { return nil }
