package historysync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/sparklet/sparklet/internal/eventlogs"
)

// Store is the bucket, read.
type Store interface {
	List(ctx context.Context, prefix string) ([]eventlogs.Object, error)
	Get(ctx context.Context, key string) (io.ReadCloser, error)
}

// Mirror keeps Dir a copy of the event logs under Prefix in Store.
type Mirror struct {
	Store  Store
	Prefix string // key prefix, without a trailing '/'; may be empty
	Dir    string
	// Interval is how often Run lists the bucket; Backoff the first wait
	// after a failed pass, doubled up to MaxBackoff.
	Interval, Backoff, MaxBackoff time.Duration
	Log                           *logrus.Entry
}

// Stats is what one pass did.
type Stats struct {
	Downloaded, Removed, Skipped int
	Bytes                        int64
}

// Run mirrors every Interval until ctx ends, and after a failed pass
// retries with backoff.
func (m *Mirror) Run(ctx context.Context) {
	var wait time.Duration
	failing := false
	for {
		start := time.Now()
		st, err := m.Pass(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil:
			wait = min(max(2*wait, m.Backoff), m.MaxBackoff)
			entry := m.Log.WithError(err).WithField("retry_in", wait.String())
			if errors.Is(err, eventlogs.ErrPermanent) {
				entry.Error("the store refused the mirror: check the bucket, the endpoint and the credential")
			} else {
				entry.Warn("mirror pass failed; retrying")
			}
			failing = true
		default:
			wait = m.Interval
			if failing || st.Downloaded > 0 || st.Removed > 0 {
				m.Log.WithFields(logrus.Fields{"downloaded": st.Downloaded, "bytes": st.Bytes, "removed": st.Removed,
					"skipped": st.Skipped, "took": time.Since(start).Round(time.Millisecond).String()}).Info("in sync with the store")
			}
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// Pass brings the mirror in line with one listing of the bucket. A failed
// listing changes nothing; a failed download is retried by the next pass.
func (m *Mirror) Pass(ctx context.Context) (Stats, error) {
	prefix := m.Prefix
	if prefix != "" {
		prefix += "/"
	}
	objects, err := m.Store.List(ctx, prefix)
	if err != nil {
		return Stats{}, fmt.Errorf("list the bucket under %q: %w", prefix, err)
	}
	files, stale, err := m.files()
	if err != nil {
		return Stats{}, err
	}
	p := decide(objects, prefix, files)
	st := Stats{Skipped: p.skipped}
	var errs []error
	for _, rel := range stale {
		if err := os.Remove(m.path(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	gone := map[string]bool{}
	for _, rel := range p.remove {
		gone[rel] = true
	}
	for _, o := range p.get {
		if err := m.download(ctx, o); err != nil {
			errs = append(errs, err)
			continue
		}
		st.Downloaded++
		st.Bytes += o.size
		// A complete app status replaces the in-progress one at once: a
		// rolling log with both is read as either (RollingEventLogFilesFileReader).
		if _, complete := eventlogs.IsAppStatus(o.rel); complete && gone[o.rel+".inprogress"] {
			if err := m.remove(o.rel + ".inprogress"); err != nil {
				errs = append(errs, err)
			} else {
				st.Removed++
			}
			delete(gone, o.rel+".inprogress")
		}
	}
	for _, rel := range p.remove {
		if !gone[rel] {
			continue
		}
		if err := m.remove(rel); err != nil {
			errs = append(errs, err)
		} else {
			st.Removed++
		}
	}
	return st, errors.Join(errs...)
}

func (m *Mirror) path(rel string) string { return filepath.Join(m.Dir, filepath.FromSlash(rel)) }

// files lists the mirror's files of Spark's layout, and the temporary
// files an earlier process left.
func (m *Mirror) files() (map[string]local, []string, error) {
	files := map[string]local{}
	var stale []string
	add := func(rel string, e fs.DirEntry) {
		if strings.HasPrefix(path.Base(rel), ".") && strings.Contains(path.Base(rel), eventlogs.TempMark) {
			stale = append(stale, rel)
			return
		}
		if !e.Type().IsRegular() || !eventlogs.IsLogFile(rel) {
			return
		}
		if fi, err := e.Info(); err == nil {
			files[rel] = local{size: fi.Size(), modified: fi.ModTime()}
		}
	}
	entries, err := os.ReadDir(m.Dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read the mirror %s: %w", m.Dir, err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			add(e.Name(), e)
			continue
		}
		if !eventlogs.IsRollingDir(e.Name()) {
			continue
		}
		inner, err := os.ReadDir(filepath.Join(m.Dir, e.Name()))
		if err != nil {
			return nil, nil, fmt.Errorf("read the mirror: %w", err)
		}
		for _, f := range inner {
			add(e.Name()+"/"+f.Name(), f)
		}
	}
	return files, stale, nil
}

// download writes one object into place, with the object's modification
// time (eventlogs.WriteFile).
func (m *Mirror) download(ctx context.Context, o remote) error {
	dest := m.path(o.rel)
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	body, err := m.Store.Get(ctx, o.key)
	if err != nil {
		return fmt.Errorf("get %s: %w", o.key, err)
	}
	defer body.Close()
	if err := eventlogs.WriteFile(dest, body, o.size, o.modified); err != nil {
		return fmt.Errorf("get %s: %w", o.key, err)
	}
	return nil
}

// remove removes one file, and its rolling log's directory once empty.
func (m *Mirror) remove(rel string) error {
	if err := os.Remove(m.path(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if dir := path.Dir(rel); dir != "." {
		_ = os.Remove(m.path(dir)) // fails while the directory holds files
	}
	return nil
}
