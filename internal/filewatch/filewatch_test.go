package filewatch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sparklet/sparklet/internal/atomicfile"
)

func TestWatchReloadsOnChange(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if err := os.WriteFile(a, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 10)
	err := Watch(ctx, 5*time.Millisecond, []string{a}, func(c [][]byte) error {
		got <- string(c[0])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != "one" {
		t.Fatalf("first load = %q", v)
	}
	if err := atomicfile.Write(a, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-got:
		if v != "two" {
			t.Fatalf("reload = %q", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no reload after the file changed")
	}
	select {
	case v := <-got:
		t.Fatalf("reloaded %q without a change", v)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestWatchOffersRejectedContentOnce(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if err := os.WriteFile(a, []byte("good"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := make(chan string, 100)
	err := Watch(ctx, 5*time.Millisecond, []string{a}, func(c [][]byte) error {
		calls <- string(c[0])
		if string(c[0]) == "bad" {
			return os.ErrInvalid
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	<-calls
	if err := atomicfile.Write(a, []byte("bad"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-calls:
		if v != "bad" {
			t.Fatalf("got %q", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no load attempt for the bad content")
	}
	// Rejected content is offered once, not on every tick.
	select {
	case v := <-calls:
		t.Fatalf("rejected content offered again: %q", v)
	case <-time.After(50 * time.Millisecond):
	}
	if err := atomicfile.Write(a, []byte("fixed"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-calls:
		if v != "fixed" {
			t.Fatalf("got %q", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no load after the fix")
	}
}

func TestWatchMissingFile(t *testing.T) {
	err := Watch(context.Background(), time.Second, []string{filepath.Join(t.TempDir(), "nope")}, func([][]byte) error { return nil })
	if err == nil {
		t.Fatal("want an error for a missing file")
	}
}
