package podrunner

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// file is one file of a ConfigMap, Secret, downward API or projected volume.
type file struct {
	data []byte
	mode os.FileMode
}

const dataLink = "..data"

// writeAtomic makes dir show exactly files, laid out as the kubelet's
// atomic writer lays them out (kubernetes pkg/volume/util/atomic_writer.go,
// v1.37.2): the files live in a timestamped directory "..<time>", the
// symlink "..data" points to it, and each top-level name is a symlink into
// "..data". An update writes a new directory and swaps "..data" with one
// rename, so a reader sees either the old or the new set. It reports
// whether anything changed.
func writeAtomic(dir string, files map[string]file) (bool, error) {
	old, _ := os.Readlink(filepath.Join(dir, dataLink))
	if old != "" && sameFiles(filepath.Join(dir, old), files) {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	ts, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return false, err
	}
	if err := os.Chmod(ts, 0o755); err != nil {
		return false, err
	}
	top := map[string]bool{}
	for path, f := range files {
		full := filepath.Join(ts, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return false, err
		}
		if err := os.WriteFile(full, f.data, f.mode); err != nil {
			return false, err
		}
		if err := os.Chmod(full, f.mode); err != nil { // not masked by the umask
			return false, err
		}
		top[strings.SplitN(path, "/", 2)[0]] = true
	}
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, dataLink)); err != nil {
		return false, err
	}
	for name := range top {
		link := filepath.Join(dir, name)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join(dataLink, name) {
			continue
		}
		if err := os.Symlink(filepath.Join(dataLink, name), link); err != nil {
			return false, err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "..") && !top[e.Name()] {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	if old != "" {
		_ = os.RemoveAll(filepath.Join(dir, old))
	}
	return true, nil
}

// sameFiles reports whether dir holds exactly files, with the same modes.
func sameFiles(dir string, files map[string]file) bool {
	seen := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		f, ok := files[rel]
		info, ierr := d.Info()
		if !ok || ierr != nil || info.Mode().Perm() != f.mode.Perm() {
			return fs.ErrNotExist
		}
		data, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(data, f.data) {
			return fs.ErrNotExist
		}
		seen++
		return nil
	})
	return err == nil && seen == len(files)
}
