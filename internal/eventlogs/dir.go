package eventlogs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Dir is a directory as the store, such as a mounted
// PersistentVolumeClaim: a key is a path under Root, so Root holds the
// layout a bucket would, and a history server reads it as file:Root.
// Each file is written to a hidden temporary name beside its place and
// renamed into it (WriteFile).
type Dir struct {
	Root string
}

// Put writes one file, making its directories (mode 0755).
func (d Dir) Put(_ context.Context, key string, body io.Reader, size int64) error {
	dest, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return permanentFS(err)
	}
	return permanentFS(WriteFile(dest, body, size, time.Time{}))
}

// Delete removes one file; a missing one is no error.
func (d Dir) Delete(_ context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return permanentFS(err)
	}
	return nil
}

// path is key's file under Root; a key that would leave Root is refused.
func (d Dir) path(key string) (string, error) {
	rel := filepath.FromSlash(key)
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%w: key %q is not a path under %s", ErrPermanent, key, d.Root)
	}
	return filepath.Join(d.Root, rel), nil
}

// permanentFS marks with ErrPermanent the errors that say the volume will
// not take the file whatever the retries: a permission refused or a
// read-only file system. A full one may get space again.
func permanentFS(err error) error {
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
		return fmt.Errorf("%w: %w", ErrPermanent, err)
	}
	return err
}
