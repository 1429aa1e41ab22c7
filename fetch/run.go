package fetch

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

// Config is what `sparklet init` runs with.
type Config struct {
	AnnotationFile string   // the pod's sparklet.io/fetch annotation, projected by the downward API
	Dest           string   // MountPath
	Policies       []Policy // the fetch policies in force, re-checked here
	Retries        int      // attempts per file after the first
	Log            *logrus.Entry
	Client         *http.Client
	// backoff is the first retry delay; it doubles. Tests shorten it.
	backoff time.Duration
}

// Run fetches every entry of the annotation into Dest. Its error is one
// line that names the URL and the problem.
func Run(ctx context.Context, cfg Config) error {
	data, err := os.ReadFile(cfg.AnnotationFile)
	if err != nil {
		return fmt.Errorf("read the %s annotation from %s: %w", Annotation, cfg.AnnotationFile, err)
	}
	entries, err := ParseAnnotation(string(data))
	if err != nil {
		return err
	}
	for _, p := range cfg.Policies {
		if err := p.Check(entries); err != nil {
			return err
		}
	}
	maxBytes, timeout := Limits(cfg.Policies)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	if cfg.backoff == 0 {
		cfg.backoff = time.Second
	}
	for _, e := range entries {
		if err := fetchOne(ctx, cfg, e, maxBytes); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%s: not done within the time limit of %s", e.URL, timeout)
			}
			return fmt.Errorf("%s: %w", e.URL, err)
		}
	}
	return nil
}

func fetchOne(ctx context.Context, cfg Config, e Entry, maxBytes int64) error {
	final := filepath.Join(cfg.Dest, filepath.FromSlash(e.Dest))
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(final), ".part-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	start := time.Now()
	if err := download(ctx, cfg, e.URL, tmp, maxBytes); err != nil {
		return err
	}
	size, _ := tmp.Seek(0, io.SeekCurrent)
	if e.SHA256 != "" {
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return err
		}
		h := sha256.New()
		if _, err := io.Copy(h, tmp); err != nil {
			return err
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != e.SHA256 {
			return fmt.Errorf("sha256 mismatch: the annotation says %s, the download is %s; nothing was kept", e.SHA256, got)
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if e.Extract != "" {
		if err := extract(tmp.Name(), final, e.Extract, maxBytes); err != nil {
			return err
		}
	} else if err := os.Rename(tmp.Name(), final); err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	cfg.Log.WithFields(logrus.Fields{"url": e.URL, "dest": final, "bytes": size, "seconds": secs,
		"bytesPerSecond": int64(float64(size) / max(secs, 1e-3))}).Info("fetched")
	return nil
}

// download streams url into f, resuming with Range after a dropped
// connection when the server allows it, with retries and backoff.
func download(ctx context.Context, cfg Config, url string, f *os.File, maxBytes int64) error {
	var last error
	delay := cfg.backoff
	for attempt := 0; attempt <= cfg.Retries; attempt++ {
		if attempt > 0 {
			cfg.Log.WithFields(logrus.Fields{"url": url, "attempt": attempt + 1, "error": last.Error()}).Warn("retrying")
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return ctx.Err()
			}
			delay *= 2
		}
		have, _ := f.Seek(0, io.SeekEnd)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if have > 0 {
			req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
		}
		resp, err := cfg.Client.Do(req)
		if err != nil {
			last = err
			continue
		}
		switch {
		case resp.StatusCode == http.StatusPartialContent && have > 0:
		case resp.StatusCode == http.StatusOK:
			// A full answer: start over, whatever we had.
			if err := f.Truncate(0); err != nil {
				resp.Body.Close()
				return err
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				resp.Body.Close()
				return err
			}
			have = 0
		case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
			resp.Body.Close()
			last = fmt.Errorf("HTTP %d", resp.StatusCode)
			continue
		default:
			resp.Body.Close()
			return fmt.Errorf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
		}
		n, err := io.Copy(f, io.LimitReader(resp.Body, maxBytes-have+1))
		resp.Body.Close()
		if have+n > maxBytes {
			return fmt.Errorf("larger than the policy's fetch.maxSize (%d bytes)", maxBytes)
		}
		if err != nil {
			last = err // dropped mid-way: resume on the next attempt
			continue
		}
		if resp.ContentLength >= 0 && n != resp.ContentLength {
			last = fmt.Errorf("connection closed after %d of %d bytes", n, resp.ContentLength)
			continue
		}
		return nil
	}
	return fmt.Errorf("gave up after %d attempts: %v", cfg.Retries+1, last)
}

// extract unpacks an archive into a temporary directory beside dest and
// renames it into place: no entry may leave it, links may not point out of
// it, and the unpacked total may not exceed maxBytes.
func extract(archive, dest, kind string, maxBytes int64) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dest), ".extract-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var total int64
	add := func(name string, mode os.FileMode, r io.Reader, link string, isDir bool) error {
		target, err := inside(tmp, name)
		if err != nil {
			return err
		}
		switch {
		case isDir:
			return os.MkdirAll(target, 0o755)
		case link != "":
			rel, err := filepath.Rel(tmp, filepath.Join(filepath.Dir(target), link))
			if filepath.IsAbs(link) || err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return fmt.Errorf("archive entry %q links to %q, outside the destination", name, link)
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			return os.Symlink(link, target)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode.Perm()|0o600)
		if err != nil {
			return err
		}
		n, err := io.Copy(out, io.LimitReader(r, maxBytes-total+1))
		out.Close()
		total += n
		if total > maxBytes {
			return fmt.Errorf("unpacks to more than the policy's fetch.maxSize (%d bytes)", maxBytes)
		}
		return err
	}
	switch kind {
	case "tar.gz":
		f, err := os.Open(archive)
		if err != nil {
			return err
		}
		defer f.Close()
		gz, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("not a gzip file: %w", err)
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("read tar: %w", err)
			}
			switch h.Typeflag {
			case tar.TypeDir:
				err = add(h.Name, 0, nil, "", true)
			case tar.TypeReg:
				err = add(h.Name, os.FileMode(h.Mode), tr, "", false)
			case tar.TypeSymlink:
				err = add(h.Name, 0, nil, h.Linkname, false)
			default:
				err = fmt.Errorf("archive entry %q has a type sparklet does not unpack (hard links, devices)", h.Name)
			}
			if err != nil {
				return err
			}
		}
	case "zip":
		zr, err := zip.OpenReader(archive)
		if err != nil {
			return fmt.Errorf("not a zip file: %w", err)
		}
		defer zr.Close()
		for _, zf := range zr.File {
			if zf.Mode()&os.ModeSymlink != 0 {
				return fmt.Errorf("archive entry %q is a symlink, which sparklet does not unpack from zip files", zf.Name)
			}
			rc, err := zf.Open()
			if err != nil {
				return err
			}
			err = add(zf.Name, zf.Mode(), rc, "", zf.FileInfo().IsDir())
			rc.Close()
			if err != nil {
				return err
			}
		}
	}
	if err := os.RemoveAll(dest); err != nil {
		return err
	}
	return os.Rename(tmp, dest)
}

// inside joins name to root and refuses paths that leave root.
func inside(root, name string) (string, error) {
	if filepath.IsAbs(name) || strings.HasPrefix(filepath.Clean(filepath.FromSlash(name)), "..") {
		return "", fmt.Errorf("archive entry %q points outside the destination", name)
	}
	return filepath.Join(root, filepath.Clean(filepath.FromSlash(name))), nil
}

// ParsePolicies decodes the --policies flag.
func ParsePolicies(s string) ([]Policy, error) {
	var p []Policy
	if s == "" {
		return nil, nil
	}
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return nil, fmt.Errorf("--policies: %w", err)
	}
	return p, nil
}
