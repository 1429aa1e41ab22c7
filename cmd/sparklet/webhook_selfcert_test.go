//go:build !sidecaronly

package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"
)

func TestCertFlags(t *testing.T) {
	cases := []struct {
		args    []string
		wantErr string // substring; "" for valid
		sans    []string
		reaping bool // --reap-kept-executors, which reads --kubeconfig too
	}{
		{args: nil},
		{args: []string{"--cert-mode=self", "--cert-namespace=sparklet-system"}},
		{args: []string{"--cert-mode=self", "--cert-namespace=ns", "--cert-extra-sans= 127.0.0.1, sparklet.example.com ,"}, sans: []string{"127.0.0.1", "sparklet.example.com"}},
		{args: []string{"--cert-mode=selfsigned"}, wantErr: "--cert-mode must be files or self"},
		{args: []string{"--cert-extra-sans=127.0.0.1"}, wantErr: "--cert-extra-sans applies only with --cert-mode=self"},
		{args: []string{"--cert-mode=files", "--kubeconfig=/tmp/k"}, wantErr: "--kubeconfig applies only with --cert-mode=self or --reap-kept-executors"},
		{args: []string{"--cert-mode=files", "--kubeconfig=/tmp/k"}, reaping: true},
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
			f := certFlags{reaping: tc.reaping}
			fs := pflag.NewFlagSet("webhook", pflag.ContinueOnError)
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
	fs := pflag.NewFlagSet("webhook", pflag.ContinueOnError)
	f.register(fs)
	log := logrus.New()
	log.SetOutput(io.Discard)
	src, err := f.certSource(context.Background(), log.WithField("component", "test"))
	if err != nil || src != nil {
		t.Fatalf("files mode: source %v, error %v", src, err)
	}
}
