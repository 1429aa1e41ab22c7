package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/sparklet/sparklet/inject"
	"github.com/sparklet/sparklet/internal/version"
	"github.com/sparklet/sparklet/policy"
)

func runInject(args []string) error {
	fs := flag.NewFlagSet("inject", flag.ContinueOnError)
	file := fs.String("f", "", "YAML file with pods or workloads to inject; - for standard input (required)")
	policyFile := fs.String("policy", "", "policy YAML file (default: the built-in policy)")
	opts := inject.Options{Version: version.Version, Warnings: os.Stderr}
	fs.StringVar(&opts.Namespace, "namespace", "", "namespace for objects that name none (default: the object's, else \"default\")")
	fs.StringVar(&opts.AppID, "app-id", "", "use this application id instead of a generated one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" {
		return errors.New("-f is required: the file to inject, or - for standard input")
	}
	opts.Policy = policy.Default(version.Version)
	if *policyFile != "" {
		data, err := os.ReadFile(*policyFile)
		if err != nil {
			return fmt.Errorf("--policy: %w", err)
		}
		if opts.Policy, err = policy.Parse(data, version.Version); err != nil {
			return fmt.Errorf("--policy %s: %w", *policyFile, err)
		}
	}
	var in io.Reader = os.Stdin
	if *file != "-" {
		f, err := os.Open(*file)
		if err != nil {
			return fmt.Errorf("-f: %w", err)
		}
		defer f.Close()
		in = f
	}
	return inject.Run(in, os.Stdout, opts)
}
