package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	for _, content := range []string{"first", "second"} {
		// 0o444 as the sidecar's token: the replacement must not need
		// to write into the old file.
		if err := Write(path, []byte(content), 0o444); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
		info, err := os.Stat(path)
		if err != nil || info.Mode().Perm() != 0o444 {
			t.Fatalf("mode %v, %v; want 0444", info.Mode(), err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("the directory holds %v (%v); want the file alone", entries, err)
	}
}

func TestWriteFailsWithoutDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "f")
	err := Write(path, []byte("x"), 0o600)
	if err == nil {
		t.Fatal("want an error for a missing directory")
	}
	// Callers that name the file themselves unwrap the cause.
	if cause := errors.Unwrap(err); !strings.HasPrefix(err.Error(), "write "+path+": ") || !errors.Is(cause, fs.ErrNotExist) {
		t.Errorf("err = %q, cause %v; want \"write %s: \" and a missing file", err, cause, path)
	}
}
