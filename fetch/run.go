package fetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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

	"github.com/sparklet/sparklet/fetch/spec"
	"github.com/sparklet/sparklet/vocab"
)

// Config is what `sparklet init` runs with.
type Config struct {
	// AnnotationFile holds the pod's sparklet.io/fetch annotation,
	// projected by a downward API volume.
	AnnotationFile string
	// Dest is the directory the entries' dests are relative to (spec.MountPath).
	Dest string
	// Policy, from vocab.EnvFetchPolicy, is checked again here, and sets the
	// size and time limits.
	Policy spec.Policy
	// Retries is how many failed attempts in a row a file may have after
	// the first; an attempt that received bytes resets the count.
	Retries int
	// Backoff is the first retry delay; it doubles up to MaxBackoff.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// ProgressEvery is how often a running download logs its progress.
	ProgressEvery time.Duration
	// Client defaults to one that follows up to 10 redirects.
	Client *http.Client
	Log    *logrus.Entry
}

// Defaults for Config.
const (
	DefaultRetries       = 4
	DefaultBackoff       = time.Second
	DefaultMaxBackoff    = 30 * time.Second
	DefaultProgressEvery = 5 * time.Second
)

// Validate names the flag, or the policy field, at fault.
func (c Config) Validate() error {
	var errs []string
	if c.AnnotationFile == "" {
		errs = append(errs, "--annotation-file is required: the file the downward API projects the "+vocab.AnnotationFetch+" annotation into")
	}
	if !filepath.IsAbs(c.Dest) {
		errs = append(errs, fmt.Sprintf("--dest %q must be an absolute directory, normally %s", c.Dest, spec.MountPath))
	}
	if c.Retries < 0 {
		errs = append(errs, fmt.Sprintf("--retries %d must be 0 or more", c.Retries))
	}
	if c.Backoff < 0 || c.MaxBackoff < 0 || c.ProgressEvery < 0 {
		errs = append(errs, "--backoff, --max-backoff and --progress-every must not be negative")
	}
	if err := c.Policy.Validate(); err != nil {
		errs = append(errs, vocab.EnvFetchPolicy+": "+err.Error())
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Backoff == 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = DefaultProgressEvery
	}
	if c.Client == nil {
		c.Client = &http.Client{}
	}
	if c.Log == nil {
		l := logrus.New()
		l.SetFormatter(&logrus.JSONFormatter{})
		c.Log = l.WithField("component", "init")
	}
	return c
}

// errTimeLimit is the cause of the context's end when fetch.timeout passes.
var errTimeLimit = errors.New("fetch.timeout passed")

// Run fetches every entry of the annotation into Dest, one after the
// other. Its error is one line that names the entry's URL and the problem.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	data, err := os.ReadFile(cfg.AnnotationFile)
	if err != nil {
		return fmt.Errorf("read the %s annotation: %w", vocab.AnnotationFetch, err)
	}
	entries, err := spec.ParseAnnotation(string(data))
	if err != nil {
		return err
	}
	if err := cfg.Policy.Check(entries); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Dest, 0o755); err != nil {
		return fmt.Errorf("--dest: %w", err)
	}
	limit := cfg.Policy.TimeLimit()
	ctx, cancel := context.WithTimeoutCause(ctx, limit, errTimeLimit)
	defer cancel()
	start := time.Now()
	var total int64
	for _, e := range entries {
		n, err := cfg.fetchOne(ctx, e)
		if err != nil {
			var st stopped
			switch {
			case errors.Is(context.Cause(ctx), errTimeLimit) && errors.As(err, &st):
				return fmt.Errorf("%s: not finished within the time limit of %s (fetch.timeout in the platform policy); %s of it had arrived", e.URL, limit, formatBytes(st.have))
			case errors.Is(context.Cause(ctx), errTimeLimit):
				return fmt.Errorf("%s: not finished within the time limit of %s (fetch.timeout in the platform policy)", e.URL, limit)
			case ctx.Err() != nil:
				return fmt.Errorf("%s: interrupted: %v", e.URL, err)
			}
			return fmt.Errorf("%s: %w", e.URL, err)
		}
		total += n
	}
	cfg.Log.WithFields(logrus.Fields{"files": len(entries), "bytes": total, "seconds": time.Since(start).Seconds()}).Info("all dependencies fetched")
	return nil
}

// fetchOne puts one entry in place and returns the bytes downloaded.
func (c Config) fetchOne(ctx context.Context, e spec.Entry) (int64, error) {
	final := filepath.Join(c.Dest, filepath.FromSlash(e.Dest))
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	removeStale(dir)
	log := c.Log.WithFields(logrus.Fields{"url": e.URL, "dest": final})
	if e.Extract == "" && e.SHA256 != "" && digestOf(final) == e.SHA256 {
		// A restarted init container finds its earlier work in the emptyDir.
		log.Info("already in place with the pinned sha256")
		return 0, nil
	}
	start := time.Now()
	tmp, digest, size, err := c.download(ctx, e.URL, dir, log)
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp)
	if e.SHA256 != "" && digest != e.SHA256 {
		return 0, fmt.Errorf("sha256 mismatch: the annotation pins %s but the %s downloaded hash to %s; nothing was kept", e.SHA256, formatBytes(size), digest)
	}
	secs := time.Since(start).Seconds()
	fields := logrus.Fields{"bytes": size, "seconds": secs, "bytesPerSecond": rate(size, secs), "sha256": digest}
	if e.Extract != "" {
		files, unpacked, err := extract(ctx, tmp, final, e.Extract, c.Policy.MaxBytes())
		if err != nil {
			return 0, err
		}
		fields["files"], fields["unpackedBytes"] = files, unpacked
		log.WithFields(fields).Info("fetched and unpacked")
		return size, nil
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, final); err != nil {
		return 0, fmt.Errorf("move into place: %w", err)
	}
	if e.SHA256 == "" {
		fields["hint"] = "pin this file with its sha256"
	}
	log.WithFields(fields).Info("fetched")
	return size, nil
}

// Temporary names, beside their destination so the rename stays on one
// file system.
const (
	partPrefix    = ".sparklet-part-"
	extractPrefix = ".sparklet-extract-"
)

// removeStale deletes what an earlier, killed run left in dir: the emptyDir
// outlives a restarted init container.
func removeStale(dir string) {
	for _, prefix := range []string{partPrefix, extractPrefix} {
		stale, _ := filepath.Glob(filepath.Join(dir, prefix+"*"))
		for _, s := range stale {
			_ = os.RemoveAll(s)
		}
	}
}

func digestOf(file string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

func rate(n int64, secs float64) int64 {
	return int64(float64(n) / max(secs, 1e-3))
}

// TerminationMessageLimit is what the kubelet keeps of a termination message.
const TerminationMessageLimit = 4096

// OneLine renders err as the single line a failed init container reports.
func OneLine(err error) string {
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	if len(msg) > TerminationMessageLimit {
		msg = msg[:TerminationMessageLimit-3] + "..."
	}
	return msg
}

// WriteTerminationMessage writes err's line to path (normally
// /dev/termination-log), where `kubectl describe pod` finds it.
func WriteTerminationMessage(path string, err error) error {
	return os.WriteFile(path, []byte(OneLine(err)+"\n"), 0o644)
}

// formatBytes prints n in binary units for messages.
func formatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
