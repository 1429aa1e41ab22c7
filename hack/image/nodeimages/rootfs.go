package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// A rootfs tarball is what mmdebstrap writes: entries named ./usr/...,
// device nodes under ./dev, hard links named by path.

// entryName is a rootfs entry's name as a layer has it: relative, without
// "./", a directory with a trailing slash; "" for the root itself.
func entryName(hdr *tar.Header) string {
	n := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
	if n != "" && hdr.Typeflag == tar.TypeDir {
		n += "/"
	}
	return n
}

// skipped reports whether a rootfs entry stays out of the layers: the root
// (the runtime makes it) and the contents of /dev (the runtime mounts its
// own; a layer should not need mknod to unpack).
func skipped(name string) bool {
	return name == "" || strings.HasPrefix(name, "dev/") && name != "dev/"
}

// walkRootfs calls fn for every entry of the rootfs tarball at p that is
// not skipped, with its name and its header normalised as a layer's.
func walkRootfs(p string, fn func(hdr *tar.Header, r io.Reader) error) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		name := entryName(hdr)
		if skipped(name) {
			continue
		}
		hdr.Name = name
		if hdr.Typeflag == tar.TypeLink {
			hdr.Linkname = strings.TrimPrefix(path.Clean("/"+hdr.Linkname), "/")
		}
		if err := fn(hdr, tr); err != nil {
			return fmt.Errorf("%s: %s: %w", p, name, err)
		}
	}
}

// copyRootfs is the layer of the whole rootfs at p.
func copyRootfs(p string) func(tw *tar.Writer) error {
	return func(tw *tar.Writer) error {
		return walkRootfs(p, func(hdr *tar.Header, r io.Reader) error {
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			_, err := io.Copy(tw, r)
			return err
		})
	}
}

// signature identifies an entry's metadata and content: two entries of
// the same name with the same signature unpack the same.
func signature(hdr *tar.Header, r io.Reader) (string, error) {
	h := sha256.New()
	meta, err := json.Marshal([]any{hdr.Typeflag, hdr.Linkname, hdr.Size, hdr.Mode, hdr.Uid, hdr.Gid,
		hdr.ModTime.Unix(), hdr.Devmajor, hdr.Devminor, hdr.PAXRecords})
	if err != nil {
		return "", err
	}
	h.Write(meta)
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

// diffRootfs is the layer that turns the rootfs at lower into the one at
// upper: upper's entries that lower lacks or has otherwise, and a
// whiteout for each topmost path of lower that upper lacks. A hard link
// comes with its target, since a layer's link must point into the layer.
func diffRootfs(lower, upper string) func(tw *tar.Writer) error {
	return func(tw *tar.Writer) error {
		have := map[string]string{}
		if err := walkRootfs(lower, func(hdr *tar.Header, r io.Reader) error {
			sig, err := signature(hdr, r)
			have[hdr.Name] = sig
			return err
		}); err != nil {
			return err
		}
		// First pass: what changed, and which hard links need their target.
		changed := map[string]bool{}
		seen := map[string]bool{}
		if err := walkRootfs(upper, func(hdr *tar.Header, r io.Reader) error {
			seen[hdr.Name] = true
			sig, err := signature(hdr, r)
			if err != nil {
				return err
			}
			if have[hdr.Name] != sig || hdr.Typeflag == tar.TypeLink && changed[hdr.Linkname] {
				changed[hdr.Name] = true
				if hdr.Typeflag == tar.TypeLink {
					changed[hdr.Linkname] = true
				}
			}
			return nil
		}); err != nil {
			return err
		}
		// The second pass writes them, in upper's order (a link's target
		// comes before it).
		if err := walkRootfs(upper, func(hdr *tar.Header, r io.Reader) error {
			if !changed[hdr.Name] {
				return nil
			}
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			_, err := io.Copy(tw, r)
			return err
		}); err != nil {
			return err
		}
		return writeWhiteouts(tw, have, seen)
	}
}

// writeWhiteouts writes a whiteout for each path of have that is not in
// seen and whose parent is.
func writeWhiteouts(tw *tar.Writer, have map[string]string, seen map[string]bool) error {
	var gone []string
	for name := range have {
		if seen[name] {
			continue
		}
		dir, base := path.Split(strings.TrimSuffix(name, "/"))
		if dir != "" && !seen[dir] {
			continue // under a removed directory: its whiteout covers it
		}
		gone = append(gone, dir+".wh."+base)
	}
	slices.Sort(gone)
	for _, name := range gone {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	return nil
}
