package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sirupsen/logrus"
)

// transfer is one file's download across attempts.
type transfer struct {
	url       string
	f         *os.File
	h         hash.Hash
	have      int64  // bytes in f, all of them hashed
	total     int64  // the whole file's size, -1 when unknown
	validator string // ETag or Last-Modified, sent as If-Range on resume
	max       int64
	start     time.Time
	lastLog   time.Time
	every     time.Duration
	log       *logrus.Entry
}

// stopped is a download the context ended.
type stopped struct {
	have int64
	err  error
}

func (s stopped) Error() string {
	return fmt.Sprintf("stopped with %s received: %v", formatBytes(s.have), s.err)
}

// errPermanent marks failures that another attempt cannot fix.
type errPermanent struct{ error }

func (e errPermanent) Unwrap() error { return e.error }

// download streams url into a temporary file in dir, retrying with
// exponential backoff and resuming with Range where the server allows it.
// It returns the file (the caller removes it), its sha256 and size; on
// error nothing is left behind.
func (c Config) download(ctx context.Context, url, dir string, log *logrus.Entry) (path, digest string, size int64, err error) {
	f, err := os.CreateTemp(dir, partPrefix+"*")
	if err != nil {
		return "", "", 0, err
	}
	defer func() {
		f.Close()
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	t := &transfer{url: url, f: f, h: sha256.New(), total: -1, max: c.Policy.MaxBytes(), start: time.Now(), every: c.ProgressEvery, log: log}
	t.lastLog = t.start
	delay, failures := c.Backoff, 0
	for {
		before := t.have
		err := c.attempt(ctx, t)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return "", "", 0, stopped{have: t.have, err: err}
		}
		if errors.As(err, new(errPermanent)) {
			return "", "", 0, err
		}
		if t.have > before {
			failures, delay = 0, c.Backoff
		} else {
			failures++
		}
		if failures > c.Retries {
			return "", "", 0, fmt.Errorf("gave up after %d failed attempts in a row: %w", failures, err)
		}
		log.WithFields(logrus.Fields{"error": err.Error(), "bytes": t.have, "retryIn": delay.String()}).Warn("retrying")
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return "", "", 0, stopped{have: t.have, err: fmt.Errorf("waiting to retry after: %w", err)}
		}
		delay = min(2*delay, c.MaxBackoff)
	}
	if err := f.Sync(); err != nil {
		return "", "", 0, err
	}
	return f.Name(), hex.EncodeToString(t.h.Sum(nil)), t.have, nil
}

// attempt makes one request and appends what arrives to t.
func (c Config) attempt(ctx context.Context, t *transfer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
	if err != nil {
		return errPermanent{err}
	}
	// The exact bytes: no transparent decompression to skew the digest.
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("User-Agent", "sparklet-init")
	resuming := t.have > 0
	if resuming {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(t.have, 10)+"-")
		if t.validator != "" {
			req.Header.Set("If-Range", t.validator)
		}
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch code := resp.StatusCode; {
	case code == http.StatusPartialContent:
		start, total, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || start != t.have {
			if err := t.restart(); err != nil {
				return err
			}
			return fmt.Errorf("asked to resume at byte %d, the server sent Content-Range %q; starting over", t.have, resp.Header.Get("Content-Range"))
		}
		t.total = total
		if resuming {
			t.log.WithField("bytes", t.have).Info("resuming")
		}
	case code == http.StatusOK:
		if resuming {
			t.log.WithField("bytes", t.have).Info("the server sent the whole file instead of the rest; starting over")
			if err := t.restart(); err != nil {
				return err
			}
		}
		t.total = resp.ContentLength
		t.validator = validator(resp.Header)
	case code == http.StatusRequestedRangeNotSatisfiable && resuming:
		if err := t.restart(); err != nil {
			return err
		}
		return errors.New("the server refused to resume (HTTP 416); starting over")
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return errors.New(status(code))
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return errPermanent{errors.New(status(code) + "; sparklet init sends no credentials, so the file must be readable without them")}
	default:
		return errPermanent{errors.New(status(code))}
	}
	if t.total > t.max {
		return errPermanent{fmt.Errorf("the file is %s, more than the %s allowed (fetch.maxSize in the platform policy)", formatBytes(t.total), formatBytes(t.max))}
	}
	if err := t.copy(resp.Body); err != nil {
		return err
	}
	if t.total >= 0 && t.have != t.total {
		return fmt.Errorf("the connection ended after %d of %d bytes", t.have, t.total)
	}
	return nil
}

// copy appends body to the file and the hash, logging progress.
func (t *transfer) copy(body io.Reader) error {
	buf := make([]byte, 256<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if t.have+int64(n) > t.max {
				return errPermanent{fmt.Errorf("the download passed the %s allowed (fetch.maxSize in the platform policy)", formatBytes(t.max))}
			}
			if _, werr := t.f.Write(buf[:n]); werr != nil {
				return errPermanent{fmt.Errorf("write: %w", werr)}
			}
			t.h.Write(buf[:n])
			t.have += int64(n)
			t.progress()
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("the connection broke after %d bytes: %w", t.have, err)
		}
	}
}

// progress logs at most once per interval.
func (t *transfer) progress() {
	now := time.Now()
	if now.Sub(t.lastLog) < t.every {
		return
	}
	t.lastLog = now
	fields := logrus.Fields{"bytes": t.have, "bytesPerSecond": rate(t.have, now.Sub(t.start).Seconds())}
	if t.total > 0 {
		fields["totalBytes"] = t.total
		fields["percent"] = t.have * 100 / t.total
	}
	t.log.WithFields(fields).Info("downloading")
}

// restart empties the file for a download from the first byte.
func (t *transfer) restart() error {
	if err := t.f.Truncate(0); err != nil {
		return errPermanent{err}
	}
	if _, err := t.f.Seek(0, io.SeekStart); err != nil {
		return errPermanent{err}
	}
	t.h.Reset()
	t.have, t.total, t.validator = 0, -1, ""
	return nil
}

// status is "HTTP 404 Not Found": the standard text, whatever the server's.
func status(code int) string {
	return strings.TrimSpace(fmt.Sprintf("HTTP %d %s", code, http.StatusText(code)))
}

// validator picks what If-Range may carry: a strong ETag, else Last-Modified.
func validator(h http.Header) string {
	if etag := h.Get("ETag"); etag != "" && !strings.HasPrefix(etag, "W/") {
		return etag
	}
	return h.Get("Last-Modified")
}

// contentRange parses "bytes START-END/TOTAL"; total is -1 for "*".
func contentRange(v string) (start, total int64, ok bool) {
	spec, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, size, found := strings.Cut(spec, "/")
	if !found {
		return 0, 0, false
	}
	first, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	if size == "*" {
		return start, -1, true
	}
	total, err = strconv.ParseInt(size, 10, 64)
	return start, total, err == nil
}
