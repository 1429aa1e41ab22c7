package main

import (
	"fmt"
	"os"

	"github.com/sirupsen/logrus"
)

// newLogger returns a JSON logger with the component field set.
func newLogger(level, component string) (*logrus.Entry, error) {
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	l := logrus.New()
	l.SetOutput(os.Stderr)
	l.SetFormatter(&logrus.JSONFormatter{})
	l.SetLevel(lvl)
	return l.WithField("component", component), nil
}
