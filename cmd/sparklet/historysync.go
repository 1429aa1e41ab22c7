//go:build !sidecaronly

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sparklet/sparklet/internal/eventlogs"
	"github.com/sparklet/sparklet/internal/historysync"
	"github.com/sparklet/sparklet/patches"
)

// historySyncConfig is `sparklet history-sync`'s flags.
type historySyncConfig struct {
	store    eventlogs.S3Config
	prefix   string
	dir      string
	interval time.Duration
}

// The mirror's backoff after a failed pass.
const (
	historySyncBackoff    = time.Second
	historySyncMaxBackoff = time.Minute
)

func newHistorySyncCmd(a *app) *cobra.Command {
	var c historySyncConfig
	cmd := &cobra.Command{
		Use:   "history-sync",
		Short: "Mirror the event logs in the history store into a directory a Spark HistoryServer reads",
		Long: "Lists the bucket under the prefix every --interval and keeps --dir a copy of the event logs the\n" +
			"sidecars shipped there, in Spark's layout, for a HistoryServer with\n" +
			"spark.history.fs.logDirectory=file:<dir>. Only this process holds the store's credential.",
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := c.validate(); err != nil {
				return usageError{err}
			}
			return runHistorySync(a, c)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&c.store.Endpoint, "endpoint", "", "the store's URL, https://host[:port] (the policy's history.s3.endpoint; required)")
	fs.StringVar(&c.store.Bucket, "bucket", "", "the bucket (history.s3.bucket; required)")
	fs.StringVar(&c.prefix, "prefix", "", "the key prefix the sidecars ship under (history.s3.prefix)")
	fs.StringVar(&c.store.Region, "region", "", "the region that signs the requests (history.s3.region; default us-east-1)")
	fs.StringVar(&c.store.CredentialDir, "credential-dir", patches.HistoryCredentialDir, "the mounted Secret's directory: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY[, AWS_SESSION_TOKEN]")
	fs.StringVar(&c.dir, "dir", "", "the directory to mirror into, which the HistoryServer reads (required)")
	fs.DurationVar(&c.interval, "interval", 10*time.Second, "how often to list the bucket")
	return cmd
}

func (c historySyncConfig) validate() error {
	var errs []error
	if c.store.Endpoint == "" {
		errs = append(errs, errors.New("--endpoint is required: the store's URL, e.g. https://s3.eu-west-1.amazonaws.com"))
	}
	if c.store.Bucket == "" {
		errs = append(errs, errors.New("--bucket is required"))
	}
	if c.dir == "" {
		errs = append(errs, errors.New("--dir is required: the directory the HistoryServer reads"))
	} else if fi, err := os.Stat(c.dir); err != nil || !fi.IsDir() {
		errs = append(errs, fmt.Errorf("--dir %s: not a directory (%v); mount the volume the HistoryServer reads there", c.dir, err))
	}
	if c.interval < time.Second {
		errs = append(errs, fmt.Errorf("--interval %s: at least 1s", c.interval))
	}
	return errors.Join(errs...)
}

// runHistorySync mirrors until SIGTERM or SIGINT.
func runHistorySync(a *app, c historySyncConfig) error {
	store, err := eventlogs.NewS3(c.store)
	if err != nil {
		return usageError{fmt.Errorf("--endpoint: %w", err)}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	a.log.WithField("store", fmt.Sprintf("%s/%s/%s", c.store.Endpoint, c.store.Bucket, c.prefix)).WithField("dir", c.dir).Info("mirroring event logs")
	m := &historysync.Mirror{Store: store, Prefix: strings.TrimSuffix(c.prefix, "/"), Dir: c.dir, Interval: c.interval,
		Backoff: historySyncBackoff, MaxBackoff: historySyncMaxBackoff, Log: a.log}
	m.Run(ctx)
	return nil
}
