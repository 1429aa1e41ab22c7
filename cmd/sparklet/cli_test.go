//go:build !sidecaronly

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// runCLI runs the command line as main does and returns its streams and
// exit code.
func runCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	t.Cleanup(klog.ClearLogger)
	var out, errOut strings.Builder
	code = execute(&app{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut}, args)
	return out.String(), errOut.String(), code
}

func TestHelpUnknownFlagsAndStrayArguments(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		code       int
		stdout     string // substring of standard output
		stderr     string // substring of standard error
		noStdout   bool
		noStderrOK bool
	}{
		{args: []string{"-h"}, stdout: "Available Commands:"},
		{args: []string{"--help"}, stdout: "inject"},
		{args: nil, stdout: "Usage:"},
		{args: []string{"help", "inject"}, stdout: "--filename"},
		{args: []string{"webhook", "-h"}, stdout: "--tls-cert-file"},
		{args: []string{"sidecar", "--help"}, stdout: "--cleanup-timeout"},
		{args: []string{"init", "-h"}, stdout: "SPARKLET_FETCH_POLICY"},
		{args: []string{"inject", "-h"}, stdout: "--ignore-cluster"},
		{args: []string{"policy", "-h"}, stdout: "validate"},
		{args: []string{"policy", "validate", "-h"}, stdout: "Exit codes"},
		{args: []string{"check", "-h"}, stdout: "--namespace"},
		{args: []string{"check", "a", "b"}, code: exitUsage, stderr: `unexpected argument "b"`},
		{args: []string{"version", "-h"}, stdout: "--output"},
		{args: []string{"history-sync", "-h"}, stdout: "--credential-dir"},
		{args: []string{"history-sync", "--bucket", "b", "--dir", "/nonexistent"}, code: exitUsage, stderr: "--endpoint is required"},
		{args: []string{"history-sync", "--endpoint", "https://s3.example.com", "--bucket", "b", "--dir", "/nonexistent"}, code: exitUsage, stderr: "--dir /nonexistent: not a directory"},
		{args: []string{"history-sync", "--endpoint", "s3.example.com", "--bucket", "b", "--dir", "/"}, code: exitUsage, stderr: "--endpoint: S3 endpoint \"s3.example.com\""},
		{args: []string{"completion", "bash"}, stdout: "__start_sparklet"},
		{args: []string{"completion", "zsh"}, stdout: "#compdef sparklet"},
		{args: []string{"nosuch"}, code: exitUsage, stderr: `unknown command "nosuch" for "sparklet"`},
		{args: []string{"--nosuch"}, code: exitUsage, stderr: "unknown flag: --nosuch"},
		{args: []string{"webhook", "--nosuch"}, code: exitUsage, stderr: "See 'sparklet webhook --help' for usage."},
		{args: []string{"sidecar", "-x"}, code: exitUsage, stderr: "unknown shorthand flag: 'x' in -x"},
		{args: []string{"init", "stray"}, code: exitUsage, stderr: `unexpected argument "stray": "sparklet init" takes no arguments`},
		{args: []string{"webhook", "stray"}, code: exitUsage, stderr: `unexpected argument "stray"`},
		{args: []string{"version", "extra"}, code: exitUsage, stderr: `unexpected argument "extra"`},
		{args: []string{"inject", "--ignore-cluster"}, code: exitUsage, stderr: "-f/--filename is required"},
		{args: []string{"inject", "-f", "-", "--ignore-cluster", "pod.yaml"}, code: exitUsage, stderr: `unexpected argument "pod.yaml"`},
		{args: []string{"inject", "-f", "-", "--ignore-cluster", "-o", "wide"}, code: exitUsage, stderr: `--output must be yaml or json, got "wide"`},
		{args: []string{"version", "--log-level=loud"}, code: exitUsage, stderr: `--log-level: not a valid logrus Level: "loud"`},
		{args: []string{"policy", "validate"}, code: exitUsage, stderr: "a policy file"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			stdout, stderr, code := runCLI(t, "", tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if !strings.Contains(stdout, tc.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdout, stdout)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, stderr)
			}
			if tc.code == 0 && stderr != "" {
				t.Errorf("stderr on success: %s", stderr)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	stdout, _, code := runCLI(t, "", "version")
	for _, want := range []string{"version: dev\n", "commit: ", "go: go1.", "platform: "} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("exit %d, stdout lacks %q:\n%s", code, want, stdout)
		}
	}
	stdout, _, code = runCLI(t, "", "version", "-o", "json")
	var info map[string]string
	if err := json.Unmarshal([]byte(stdout), &info); err != nil || code != 0 {
		t.Fatalf("version -o json: exit %d, %v:\n%s", code, err, stdout)
	}
	for _, k := range []string{"version", "commit", "goVersion", "platform"} {
		if info[k] == "" {
			t.Errorf("version -o json lacks %s: %v", k, info)
		}
	}
}

// writeFiles creates files under a temporary directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
