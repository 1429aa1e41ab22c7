package main

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// file is one entry of a layer made from files on this machine.
type file struct {
	name     string // in the image, relative; a directory ends in /
	src      string // the file to copy, "" for a directory
	uid, gid int
	mode     int64
}

// tree lists the directory src as the image's dir (relative, e.g.
// opt/spark) owned by uid:gid: directories 0755, files 0755 when
// executable here and 0644 otherwise, symbolic links as they are. skip
// names entries of src's top level to leave out.
func tree(src, dir string, uid, gid int, skip ...string) ([]file, error) {
	var files []file
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if slices.Contains(skip, rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		name := path.Join(dir, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			files = append(files, file{name: name + "/", uid: uid, gid: gid, mode: 0o755})
		case d.Type()&fs.ModeSymlink != 0:
			files = append(files, file{name: name, src: p, uid: uid, gid: gid, mode: 0o777})
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			mode := int64(0o644)
			if info.Mode()&0o111 != 0 {
				mode = 0o755
			}
			files = append(files, file{name: name, src: p, uid: uid, gid: gid, mode: mode})
		default:
			return fmt.Errorf("%s: neither a file, a directory nor a symbolic link", p)
		}
		return nil
	})
	return files, err
}

// writeFiles is the layer of files, in name order, dated created.
func writeFiles(files []file, created time.Time) func(tw *tar.Writer) error {
	return func(tw *tar.Writer) error {
		files = slices.Clone(files)
		slices.SortFunc(files, func(a, b file) int {
			return strings.Compare(a.name, b.name)
		})
		for _, f := range files {
			hdr := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.gid, ModTime: created, Format: tar.FormatPAX}
			var info os.FileInfo
			switch {
			case f.src == "":
				hdr.Typeflag = tar.TypeDir
			default:
				var err error
				if info, err = os.Lstat(f.src); err != nil {
					return err
				}
				if info.Mode()&fs.ModeSymlink != 0 {
					hdr.Typeflag = tar.TypeSymlink
					if hdr.Linkname, err = os.Readlink(f.src); err != nil {
						return err
					}
				} else {
					hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
				}
			}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			if hdr.Typeflag == tar.TypeReg {
				if err := copyFile(tw, f.src); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

func copyFile(w io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}
