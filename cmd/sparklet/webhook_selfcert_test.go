package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/sirupsen/logrus"
)

func TestCertFlags(t *testing.T) {
	cases := []struct {
		args    []string
		wantErr string // substring; "" for valid
		sans    []string
	}{
		{args: nil},
		{args: []string{"--cert-mode=self", "--cert-namespace=sparklet-system"}},
		{args: []string{"--cert-mode=self", "--cert-namespace=ns", "--cert-extra-sans= 127.0.0.1, sparklet.example.com ,"}, sans: []string{"127.0.0.1", "sparklet.example.com"}},
		{args: []string{"--cert-mode=selfsigned"}, wantErr: "--cert-mode must be files or self"},
		{args: []string{"--cert-mode=self"}, wantErr: "--cert-namespace"},
		{args: []string{"--cert-mode=self", "--cert-namespace=ns", "--cert-secret=Certs"}, wantErr: "--cert-secret"},
		{args: []string{"--cert-mode=self", "--cert-namespace=ns", "--service-name=my.svc"}, wantErr: "--service-name"},
		{args: []string{"--cert-mode=self", "--cert-namespace=ns", "--cert-extra-sans=not a name"}, wantErr: "--cert-extra-sans"},
		{args: []string{"--cert-mode=self", "--cert-namespace=ns", "--cert-validity=10m"}, wantErr: "--cert-validity"},
		{args: []string{"--cert-mode=self", "--cert-namespace=ns", "--cert-validity=3h", "--cert-check-interval=2h"}, wantErr: "--cert-check-interval"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", "")
			var f certFlags
			fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
			f.register(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := f.validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one naming %s", err, tc.wantErr)
			}
			if err == nil && !slices.Equal(f.self.ExtraSANs, tc.sans) {
				t.Errorf("extra SANs %q, want %q", f.self.ExtraSANs, tc.sans)
			}
		})
	}
}

// In files mode there is no source: the server must see a nil interface,
// not a typed nil, or it would never read the files.
func TestFilesModeHasNoSource(t *testing.T) {
	var f certFlags
	fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
	f.register(fs)
	log := logrus.New()
	log.SetOutput(io.Discard)
	src, err := f.certSource(context.Background(), log.WithField("component", "test"))
	if err != nil || src != nil {
		t.Fatalf("files mode: source %v, error %v", src, err)
	}
}

// klog lines (client-go's leader election) come out as logrus JSON.
func TestKlogGoesToLogrus(t *testing.T) {
	var buf strings.Builder
	l := logrus.New()
	l.SetOutput(&buf)
	l.SetFormatter(&logrus.JSONFormatter{})
	sink := &logrusSink{log: l.WithField("component", "client-go")}
	lg := logr.New(sink).WithName("leaderelection").WithValues("lock", "ns/name")
	lg.Info("Successfully acquired lease")
	lg.V(4).Info("renewed")
	lg.Error(errors.New("forbidden"), "Error initially creating lease lock")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2 (V(4) is debug):\n%s", len(lines), buf.String())
	}
	for _, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		if m["component"] != "client-go" || m["lock"] != "ns/name" || m["logger"] != "leaderelection" {
			t.Errorf("fields lost: %s", line)
		}
	}
	if !strings.Contains(lines[1], `"error":"forbidden"`) {
		t.Errorf("error lost: %s", lines[1])
	}
}
