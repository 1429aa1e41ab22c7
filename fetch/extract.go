package fetch

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/sparklet/sparklet/fetch/spec"
)

// MaxArchiveEntries caps the entries of one archive, so that millions of
// empty files cannot exhaust the emptyDir's inodes.
const MaxArchiveEntries = 100000

// unpacker writes archive entries below a root that no path may leave
// (os.Root refuses to follow any path or link out of it) and counts the
// bytes against the size limit.
type unpacker struct {
	ctx     context.Context
	root    *os.Root
	max     int64
	written int64
	files   int
}

// extract unpacks archive into a temporary directory beside dest, checks
// that every symlink resolves inside it, and renames it to dest. On error
// nothing is left behind.
func extract(ctx context.Context, archive, dest, kind string, maxBytes int64) (files int, written int64, err error) {
	tmp, err := os.MkdirTemp(filepath.Dir(dest), extractPrefix+"*")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(tmp) // a no-op after the rename
	root, err := os.OpenRoot(tmp)
	if err != nil {
		return 0, 0, err
	}
	defer root.Close()
	u := &unpacker{ctx: ctx, root: root, max: maxBytes}
	switch kind {
	case spec.TarGz:
		err = u.tarGz(archive)
	case spec.Zip:
		err = u.zip(archive)
	default:
		err = fmt.Errorf("extract %q: must be %s or %s", kind, spec.TarGz, spec.Zip)
	}
	if err != nil {
		return 0, 0, err
	}
	if err := linksStayInside(tmp); err != nil {
		return 0, 0, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return 0, 0, err
	}
	if err := os.RemoveAll(dest); err != nil {
		return 0, 0, err
	}
	if err := os.Rename(tmp, dest); err != nil {
		return 0, 0, fmt.Errorf("move into place: %w", err)
	}
	return u.files, u.written, nil
}

func (u *unpacker) tarGz(archive string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("not a tar.gz file: %w", err)
	}
	tr := tar.NewReader(gz)
	for n := 1; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not a valid tar.gz file: %w", err)
		}
		if n > MaxArchiveEntries {
			return fmt.Errorf("the archive has more than %d entries", MaxArchiveEntries)
		}
		if err := u.ctx.Err(); err != nil {
			return err
		}
		name, err := entryName(h.Name)
		if err != nil || name == "" {
			if err != nil {
				return err
			}
			continue // the archive's own top directory, "./"
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = u.dir(name)
		case tar.TypeReg:
			err = u.file(name, fs.FileMode(h.Mode), tr)
		case tar.TypeSymlink:
			err = u.symlink(name, h.Linkname)
		case tar.TypeLink:
			err = u.hardlink(name, h.Linkname)
		case tar.TypeXGlobalHeader:
		default:
			err = fmt.Errorf("archive entry %q is a device, FIFO or other special file, which sparklet does not unpack", h.Name)
		}
		if err != nil {
			return err
		}
	}
}

func (u *unpacker) zip(archive string) error {
	zr, err := zip.OpenReader(archive)
	if err != nil {
		return fmt.Errorf("not a zip file: %w", err)
	}
	defer zr.Close()
	if len(zr.File) > MaxArchiveEntries {
		return fmt.Errorf("the archive has %d entries, more than %d", len(zr.File), MaxArchiveEntries)
	}
	var declared uint64
	for _, zf := range zr.File {
		declared += zf.UncompressedSize64
	}
	if declared > uint64(u.max) {
		return fmt.Errorf("the archive declares %s unpacked, more than the %s allowed (fetch.maxSize in the platform policy)", formatBytes(int64(min(declared, 1<<62))), formatBytes(u.max))
	}
	for _, zf := range zr.File {
		if err := u.ctx.Err(); err != nil {
			return err
		}
		name, err := entryName(zf.Name)
		if err != nil {
			return err
		}
		if name == "" {
			continue
		}
		mode := zf.Mode()
		switch {
		case mode.IsDir():
			err = u.dir(name)
		case mode&fs.ModeSymlink != 0:
			var target []byte
			if target, err = readSmall(zf); err == nil {
				err = u.symlink(name, string(target))
			}
		case mode.IsRegular():
			var rc io.ReadCloser
			if rc, err = zf.Open(); err == nil {
				err = u.file(name, mode, rc)
				rc.Close()
			}
		default:
			err = fmt.Errorf("archive entry %q is a device, FIFO or other special file, which sparklet does not unpack", zf.Name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// readSmall reads a zip symlink's target.
func readSmall(zf *zip.File) ([]byte, error) {
	rc, err := zf.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 4097))
	if err == nil && len(b) > 4096 {
		err = fmt.Errorf("archive entry %q is a symlink with a target longer than 4096 bytes", zf.Name)
	}
	return b, err
}

// entryName refuses absolute names and any .. segment; "" means the
// archive's top directory itself.
func entryName(name string) (string, error) {
	switch {
	case strings.HasPrefix(name, "/"):
		return "", fmt.Errorf("archive entry %q has an absolute path; sparklet unpacks only relative paths", name)
	case strings.Contains(name, `\`):
		return "", fmt.Errorf("archive entry %q uses \\ in its path; sparklet unpacks only / separated paths", name)
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." {
			return "", fmt.Errorf("archive entry %q contains .., which would leave the destination", name)
		}
	}
	if clean := path.Clean(name); clean != "." {
		return clean, nil
	}
	return "", nil
}

func (u *unpacker) dir(name string) error {
	return u.mkdirs(name, name)
}

// mkdirs creates dir for the entry named entry.
func (u *unpacker) mkdirs(entry, dir string) error {
	if err := u.root.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("archive entry %q: create directory %q: %w", entry, dir, err)
	}
	return nil
}

func (u *unpacker) parent(name string) error {
	if dir := path.Dir(name); dir != "." {
		return u.mkdirs(name, dir)
	}
	return nil
}

// replace removes an earlier entry of the same name: later entries win,
// as with tar itself, and a new file never writes through an old link.
func (u *unpacker) replace(name string) error {
	if err := u.parent(name); err != nil {
		return err
	}
	if err := u.root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("archive entry %q: %w", name, err)
	}
	return nil
}

func (u *unpacker) file(name string, mode fs.FileMode, r io.Reader) error {
	if err := u.replace(name); err != nil {
		return err
	}
	// Readable by the Spark container's user; execute bits kept; no
	// setuid, setgid or sticky bits; no write for group or others.
	perm := mode.Perm()&0o755 | 0o644
	out, err := u.root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return fmt.Errorf("archive entry %q: %w", name, err)
	}
	n, err := io.Copy(out, io.LimitReader(r, u.max-u.written+1))
	u.written += n
	if err == nil {
		err = out.Chmod(perm)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if u.written > u.max {
		return fmt.Errorf("the archive unpacks to more than the %s allowed (fetch.maxSize in the platform policy); refused at entry %q", formatBytes(u.max), name)
	}
	if err != nil {
		return fmt.Errorf("archive entry %q: %w", name, err)
	}
	u.files++
	return nil
}

func (u *unpacker) symlink(name, target string) error {
	escapes := path.IsAbs(target) || target == "" ||
		path.Clean(path.Join(path.Dir(name), target)) == ".." ||
		strings.HasPrefix(path.Clean(path.Join(path.Dir(name), target)), "../")
	if escapes {
		return fmt.Errorf("archive entry %q is a symlink to %q, outside the destination; sparklet unpacks only relative links that stay inside", name, target)
	}
	if err := u.replace(name); err != nil {
		return err
	}
	if err := u.root.Symlink(target, name); err != nil {
		return fmt.Errorf("archive entry %q: %w", name, err)
	}
	return nil
}

func (u *unpacker) hardlink(name, target string) error {
	clean, err := entryName(target)
	if err != nil || clean == "" {
		return fmt.Errorf("archive entry %q is a hard link to %q, outside the destination", name, target)
	}
	info, err := u.root.Lstat(clean)
	if err != nil || !info.Mode().IsRegular() {
		return fmt.Errorf("archive entry %q is a hard link to %q, which is not a file unpacked before it", name, target)
	}
	if err := u.replace(name); err != nil {
		return err
	}
	if err := u.root.Link(clean, name); err != nil {
		return fmt.Errorf("archive entry %q: %w", name, err)
	}
	u.files++
	return nil
}

// linksStayInside resolves every symlink under dir, as the kernel will when
// Spark reads it, and refuses any that ends outside dir or nowhere. A
// textual check at unpack time cannot see links through other links.
func linksStayInside(dir string) error {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		target, _ := os.Readlink(p)
		resolved, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fmt.Errorf("archive entry %q is a symlink to %q, which is not in the archive", filepath.ToSlash(rel), target)
		}
		if r, err := filepath.Rel(realDir, resolved); err != nil || r == ".." || strings.HasPrefix(r, "../") {
			return fmt.Errorf("archive entry %q is a symlink to %q, which resolves outside the destination", filepath.ToSlash(rel), target)
		}
		return nil
	})
}
