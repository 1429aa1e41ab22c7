package main

import (
	"fmt"
	"io"
	"time"

	"github.com/go-logr/logr"
	"github.com/sirupsen/logrus"
	"k8s.io/klog/v2"

	"github.com/sparklet/sparklet/internal/jsonlog"
)

// newLogger returns a JSON logger with sub-second timestamps and the
// component field set, and routes client-go's klog output into it, so that
// every line a subcommand writes to standard error is one JSON object.
func newLogger(w io.Writer, level, component string) (*logrus.Entry, error) {
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	l := logrus.New()
	l.SetOutput(w)
	l.SetFormatter(&jsonlog.Formatter{JSONFormatter: logrus.JSONFormatter{TimestampFormat: time.RFC3339Nano}})
	l.SetLevel(lvl)
	log := l.WithField("component", component)
	klog.SetLogger(logr.New(&logrusSink{log: log.WithField("logger", "client-go")}))
	return log, nil
}

// logrusSink is a logr.LogSink writing to logrus: klog's V(0) at Info,
// higher verbosity at Debug.
type logrusSink struct {
	log  *logrus.Entry
	name string
}

func (s *logrusSink) Init(logr.RuntimeInfo) {}

func (s *logrusSink) Enabled(level int) bool {
	return level == 0 || s.log.Logger.IsLevelEnabled(logrus.DebugLevel)
}

func (s *logrusSink) entry(kv []any) *logrus.Entry {
	e := s.log
	if s.name != "" {
		e = e.WithField("logger", "client-go/"+s.name)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		e = e.WithField(fmt.Sprint(kv[i]), kv[i+1])
	}
	return e
}

func (s *logrusSink) Info(level int, msg string, kv ...any) {
	if level == 0 {
		s.entry(kv).Info(msg)
	} else {
		s.entry(kv).Debug(msg)
	}
}

func (s *logrusSink) Error(err error, msg string, kv ...any) {
	s.entry(kv).WithError(err).Error(msg)
}

func (s *logrusSink) WithValues(kv ...any) logr.LogSink {
	return &logrusSink{log: s.entry(kv), name: s.name}
}

func (s *logrusSink) WithName(name string) logr.LogSink {
	if s.name != "" {
		name = s.name + "/" + name
	}
	return &logrusSink{log: s.log, name: name}
}
