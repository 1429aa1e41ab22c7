//go:build !sidecaronly

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestPolicyValidate(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"good.yaml":  "limits: {maxExecutors: 5}\nspark: {defaults: {spark.executor.cores: 2}}\n",
		"bad.yaml":   "limits: {maxExecutors: -1}\nspark:\n  defaults:\n    spark.master: local\n",
		"typo.yaml":  "limits: {maxExecutorz: 5}\n",
		"twice.yaml": "limits: {maxExecutors: 5}\nlimits: {maxExecutors: 6}\n",
	})
	at := func(f string) string { return filepath.Join(dir, f) }
	for _, tc := range []struct {
		name   string
		args   []string
		stdin  string
		code   int
		stdout []string
		stderr string
	}{
		{name: "valid", args: []string{at("good.yaml")}, stdout: []string{at("good.yaml") + ": valid\n"}},
		{name: "the example", args: []string{"../../examples/policy.yaml"}, stdout: []string{"../../examples/policy.yaml: valid\n"}},
		{name: "every problem on its own line", args: []string{at("bad.yaml")}, code: exitFailure,
			stdout: []string{at("bad.yaml") + ": invalid\n", "  - limits.maxExecutors: must not be negative, got -1\n",
				"  - spark.defaults.spark.master: reserved: sparklet points it at the sidecar on 127.0.0.1; remove it from the policy\n"},
			stderr: "Error: 1 of 1 policy files invalid"},
		{name: "an unknown field", args: []string{at("typo.yaml")}, code: exitFailure,
			stdout: []string{"  - limits.maxExecutorz: unknown field (known fields: driver, executor, maxExecutors)\n"}},
		{name: "a key twice", args: []string{at("twice.yaml")}, code: exitFailure, stdout: []string{`key "limits" appears twice (lines 1 and 2)`}},
		{name: "several files, each judged", args: []string{at("good.yaml"), at("typo.yaml"), at("bad.yaml")}, code: exitFailure,
			stdout: []string{at("good.yaml") + ": valid\n", at("typo.yaml") + ": invalid\n", at("bad.yaml") + ": invalid\n"}, stderr: "2 of 3 policy files invalid"},
		{name: "stdin", args: []string{"-"}, stdin: "allowedImages: ['apache/spark:*']\n", stdout: []string{"-: valid\n"}},
		{name: "an unreadable file", args: []string{at("nope.yaml")}, code: exitUsage, stderr: "no such file or directory"},
		{name: "no file", args: nil, code: exitUsage, stderr: "a policy file is required"},
		{name: "server dry run without a cluster", args: []string{"--server-dry-run", "--kubeconfig", at("good.yaml"), at("good.yaml")}, code: exitUsage, stderr: "--server-dry-run: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, tc.stdin, append([]string{"policy", "validate", "--log-level=error"}, tc.args...)...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.stderr, stderr)
			}
		})
	}
}
