package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Write writes data to a new file next to path, with permissions perm (no
// umask applied), and renames it over path. Its error is an *fs.PathError
// with Op "write" and the path, "write PATH: cause"; errors.Unwrap gives the
// cause.
func Write(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}
