package sidecar

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/sparklet/sparklet/internal/eventlogs"
	"github.com/sparklet/sparklet/patches"
	"github.com/sparklet/sparklet/policy"
)

// How the sidecar ships event logs: it looks for rolled files every
// eventLogInterval, retries a failed upload after eventLogBackoff doubling
// to eventLogMaxBackoff, and once the JVM has ended ships the rest for at
// most eventLogFinishTimeout.
const (
	eventLogInterval      = 2 * time.Second
	eventLogBackoff       = time.Second
	eventLogMaxBackoff    = 30 * time.Second
	eventLogFinishTimeout = 2 * time.Minute
)

// eventLogShipping ships the JVM's event logs while it runs.
type eventLogShipping struct {
	shipper *eventlogs.Shipper
	stop    context.CancelFunc
	done    chan struct{}
	files   atomic.Int64
	bytes   atomic.Int64
}

// shipEventLogs starts shipping when the webhook pointed the JVM's event
// logs at the sidecar (cfg.EventLogDir) and the policy names a store; nil
// otherwise.
func (s *Sidecar) shipEventLogs(pol *policy.Effective) (*eventLogShipping, error) {
	if !s.shipsEventLogs(pol) {
		return nil, nil
	}
	store, prefix, where, err := historyStore(pol.History)
	if err != nil {
		return nil, err
	}
	e := &eventLogShipping{done: make(chan struct{})}
	log := s.log.WithField("component", "eventlogs")
	e.shipper = &eventlogs.Shipper{
		Dir: s.cfg.EventLogDir, Prefix: prefix, Store: store,
		Interval: eventLogInterval, Backoff: eventLogBackoff, MaxBackoff: eventLogMaxBackoff,
		Shipped: func(key string, size int64, took time.Duration) {
			e.files.Add(1)
			e.bytes.Add(size)
			log.WithFields(logrus.Fields{"key": key, "bytes": size, "took": took.String()}).Info("event log file shipped")
		},
		Failed: func(key string, err error) {
			log.WithError(err).WithField("key", key).Warn("event log upload failed; retrying")
		},
		Unreadable: func(err error) {
			log.WithError(err).Warn("cannot read the JVM's event logs; retrying")
			s.events.warning("EventLogShipFailed", fmt.Sprintf("cannot read the JVM's event logs: %v; the sidecar (uid %d) reads what Spark writes through the pod's fsGroup (docs/event-logs.md)", err, os.Getuid()))
		},
	}
	ctx, stop := context.WithCancel(context.Background())
	e.stop = stop
	go func() { e.shipper.Run(ctx); close(e.done) }()
	log.WithField("store", where).Info("shipping event logs")
	return e, nil
}

// historyStore is the policy's store, the key prefix in it, and where it
// is, for the log: the bucket, or the claim the webhook mounted in this
// container alone.
func historyStore(h *policy.History) (eventlogs.Store, string, string, error) {
	if c := h.PVC; c != nil {
		return eventlogs.Dir{Root: patches.HistoryVolumeDir}, c.Prefix, fmt.Sprintf("pvc %s: %s/%s", c.ClaimName, patches.HistoryVolumeDir, c.Prefix), nil
	}
	s3 := h.S3
	store, err := eventlogs.NewS3(eventlogs.S3Config{Endpoint: s3.Endpoint, Bucket: s3.Bucket, Region: s3.Region, CredentialDir: patches.HistoryCredentialDir})
	if err != nil {
		return nil, "", "", fmt.Errorf("history store: %w", err)
	}
	return store, s3.Prefix, fmt.Sprintf("%s/%s/%s", s3.Endpoint, s3.Bucket, s3.Prefix), nil
}

// shipsEventLogs tells whether the sidecar ships the JVM's event logs.
func (s *Sidecar) shipsEventLogs(pol *policy.Effective) bool {
	return s.cfg.EventLogDir != "" && pol.History != nil && (pol.History.S3 != nil || pol.History.PVC != nil)
}

// recordHistoryURL has the application's page on the policy's history
// server recorded once the application id is known: now, or, for an
// app-per-JVM driver, each time a JVM names its application. It must be
// called before the JVM's requests are served; the patch runs beside the
// JVM's start, which it does not delay.
func (s *Sidecar) recordHistoryURL(pol *policy.Effective) {
	h := s.historyPages(pol)
	if h == nil {
		return
	}
	if s.cfg.AppPerJVM {
		s.apps.whenAppStarts(func(id string) { h.record(context.Background(), id) })
		return
	}
	go h.record(context.Background(), s.appID)
}

// historyPages is what records the history server's pages; nil when the
// sidecar ships no event log or the policy names no history server.
func (s *Sidecar) historyPages(pol *policy.Effective) *historyURL {
	if !s.shipsEventLogs(pol) || pol.History.URL == "" {
		return nil
	}
	return &historyURL{client: s.client, namespace: s.cfg.Namespace, pod: s.cfg.PodName, history: pol.History, events: s.events}
}

// finish ships what the ended JVM left and says so in an Event.
func (s *Sidecar) finishEventLogs(e *eventLogShipping) {
	if e == nil {
		return
	}
	e.stop()
	<-e.done
	ctx, cancel := context.WithTimeout(context.Background(), eventLogFinishTimeout)
	defer cancel()
	start := time.Now()
	err := e.shipper.Finish(ctx)
	took := time.Since(start).Round(time.Millisecond)
	if err != nil {
		s.events.warning("EventLogShipFailed", fmt.Sprintf("event logs of %s not all shipped after %s: %v", s.appID, took, err))
		s.log.WithError(err).Error("event logs not all shipped")
	} else {
		msg := fmt.Sprintf("shipped the event logs of %s: %d files, %d bytes; the last in %s after the JVM ended", s.appID, e.files.Load(), e.bytes.Load(), took)
		s.events.normal("EventLogShipped", msg)
		s.log.Info(msg)
	}
	s.events.flush(5 * time.Second)
}
