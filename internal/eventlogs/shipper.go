package eventlogs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Store keeps objects under keys. Put replaces an object whole.
type Store interface {
	Put(ctx context.Context, key string, body io.Reader, size int64) error
	Delete(ctx context.Context, key string) error
}

// Shipper ships the finished event logs of Dir into Store under Prefix.
// Run ships while the JVM runs; Finish ships the rest once it has ended.
// What was shipped stays in the store: the shipper deletes nothing but a
// rolling log's in-progress app status once the complete one is there.
type Shipper struct {
	Dir    string
	Prefix string // key prefix, without a trailing '/'; may be empty
	Store  Store
	// Interval is how often Run looks for finished files; Backoff the
	// first wait after a failed upload, doubled up to MaxBackoff.
	Interval, Backoff, MaxBackoff time.Duration
	// Shipped and Failed, when set, hear of each upload and each failure.
	Shipped func(key string, size int64, took time.Duration)
	Failed  func(key string, err error)
	// Unreadable, when set, hears when Dir or a log in it cannot be read
	// (a pod whose fsGroup does not let the shipper read what the JVM
	// wrote), once for each new error; nothing of it ships meanwhile.
	Unreadable func(err error)

	mu      sync.Mutex
	shipped map[string]file // by rel: what the store holds
	retry   map[string]retry
	dirErr  string // the last read error reported to Unreadable
}

// ErrPermanent marks a store's error that retrying will not cure, such as
// a refused credential or a missing bucket. Finish gives up at once when
// every file it could not ship failed with one.
var ErrPermanent = errors.New("retrying will not help")

// errWaiting stands for a file that failed before and waits for its retry.
var errWaiting = errors.New("waiting to retry")

type retry struct {
	at   time.Time
	wait time.Duration
	err  error // the last
}

// Run ships finished files every Interval until ctx ends.
func (s *Shipper) Run(ctx context.Context) {
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	for {
		_ = s.pass(ctx, false)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Finish ships every file not yet shipped as it is now, retrying until
// ctx ends; call it once the JVM has ended (and Run has returned). It
// returns the last error of each file it could not ship.
func (s *Shipper) Finish(ctx context.Context) error {
	for {
		err := s.pass(ctx, true)
		if err == nil || s.hopeless() {
			return err
		}
		wait := s.nextRetry()
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

// pass ships what is ready and due, in order, and returns the errors.
func (s *Shipper) pass(ctx context.Context, final bool) error {
	files, err := ready(s.Dir, final)
	if err != nil {
		err = fmt.Errorf("read %s: %w", s.Dir, err)
		s.unreadable(err)
		return err
	}
	s.unreadable(nil)
	var errs []error
	// A rolling log whose event file is not in the store yet ships
	// nothing after it: its complete app status waits.
	blocked := map[string]bool{}
	for _, f := range files {
		if ctx.Err() != nil {
			return errors.Join(append(errs, ctx.Err())...)
		}
		dir := path.Dir(f.rel)
		if s.isShipped(f) || (dir != "." && blocked[dir]) {
			continue
		}
		err := errWaiting
		if s.due(f.rel) {
			if err = s.ship(ctx, f); err != nil {
				s.failed(f.rel, err)
			}
		}
		if err != nil {
			errs = append(errs, err)
			blocked[dir] = strings.HasPrefix(path.Base(f.rel), eventsPrefix)
		}
	}
	return errors.Join(errs...)
}

// unreadable reports a read error of the directory to Unreadable when it
// differs from the last one reported; nil clears it.
func (s *Shipper) unreadable(err error) {
	s.mu.Lock()
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	report := err != nil && msg != s.dirErr
	s.dirErr = msg
	s.mu.Unlock()
	if report && s.Unreadable != nil {
		s.Unreadable(err)
	}
}

// ship uploads one file, then drops the in-progress app status a complete
// one replaces, also when an earlier sidecar shipped it.
func (s *Shipper) ship(ctx context.Context, f file) error {
	key := s.key(f.rel)
	start := time.Now()
	body, err := os.Open(filepath.Join(s.Dir, filepath.FromSlash(f.rel)))
	if err != nil {
		return fmt.Errorf("open %s: %w", f.rel, err)
	}
	defer body.Close()
	if err := s.Store.Put(ctx, key, body, f.size); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	if name := path.Base(f.rel); strings.HasPrefix(name, appStatusPrefix) && !strings.HasSuffix(name, inProgress) {
		if err := s.Store.Delete(ctx, key+inProgress); err != nil {
			return fmt.Errorf("delete %s: %w", key+inProgress, err)
		}
	}
	s.mu.Lock()
	if s.shipped == nil {
		s.shipped = map[string]file{}
	}
	s.shipped[f.rel] = f
	delete(s.shipped, f.rel+inProgress)
	delete(s.retry, f.rel)
	s.mu.Unlock()
	if s.Shipped != nil {
		s.Shipped(key, f.size, time.Since(start))
	}
	return nil
}

// key is rel under Prefix; a prefix written with slashes around it, as
// "events/", gives the same keys as "events", never "events//...".
func (s *Shipper) key(rel string) string {
	prefix := strings.Trim(s.Prefix, "/")
	if prefix == "" {
		return rel
	}
	return prefix + "/" + rel
}

func (s *Shipper) isShipped(f file) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	got, ok := s.shipped[f.rel]
	return ok && got == f
}

// due tells whether a file that failed has waited out its backoff.
func (s *Shipper) due(rel string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.retry[rel]
	return !ok || !time.Now().Before(r.at)
}

// failed doubles the file's wait, from Backoff up to MaxBackoff.
func (s *Shipper) failed(rel string, err error) {
	s.mu.Lock()
	if s.retry == nil {
		s.retry = map[string]retry{}
	}
	r := s.retry[rel]
	r.wait = min(max(2*r.wait, s.Backoff), s.MaxBackoff)
	r.at = time.Now().Add(r.wait)
	r.err = err
	s.retry[rel] = r
	s.mu.Unlock()
	if s.Failed != nil {
		s.Failed(s.key(rel), err)
	}
}

// hopeless tells whether every file that failed last failed for good.
func (s *Shipper) hopeless() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.retry {
		if !errors.Is(r.err, ErrPermanent) {
			return false
		}
	}
	return len(s.retry) > 0
}

// nextRetry is how long until the first failed file is due again.
func (s *Shipper) nextRetry() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	wait := s.MaxBackoff
	for _, r := range s.retry {
		wait = min(wait, time.Until(r.at))
	}
	return max(wait, 10*time.Millisecond)
}
