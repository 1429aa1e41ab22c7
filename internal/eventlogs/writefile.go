package eventlogs

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// TempMark is in the name of every file sparklet writes before renaming it
// into place; with the leading '.' of that name, Spark's reader skips it
// (EventLogFileReader.isSingleEventLog, 3.5.9 to 4.3.0), and a rolling
// log reads only its events_ and appstatus_ files.
const TempMark = ".sparklet-"

// WriteFile writes size bytes of body to a hidden temporary file beside
// dest, mode 0644 so that a history server of another user reads it,
// with the modification time modified (unless zero), flushes it to
// storage and renames it to dest: a reader sees the old file or the
// whole new one, never a part. The temporary files an earlier writer of
// dest left are removed first.
func WriteFile(dest string, body io.Reader, size int64, modified time.Time) error {
	dir, base := filepath.Split(dest)
	if stale, err := filepath.Glob(filepath.Join(dir, "."+base+TempMark+"*")); err == nil {
		for _, s := range stale {
			_ = os.Remove(s)
		}
	}
	tmp, err := os.CreateTemp(dir, "."+base+TempMark+"*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	n, err := io.Copy(tmp, body)
	if err == nil && n != size {
		err = fmt.Errorf("read %d bytes, want %d (the source changed meanwhile)", n, size)
	}
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && !modified.IsZero() {
		err = os.Chtimes(tmp.Name(), modified, modified)
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dest)
}
