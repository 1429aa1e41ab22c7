//go:build !sidecaronly

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sparklet/sparklet/inject"
	"github.com/sparklet/sparklet/internal/version"
)

func newInjectCmd(a *app) *cobra.Command {
	var (
		files     []string
		recursive bool
		kube      kubeFlags
		pol       policyFlags
		opts      = inject.Options{Version: version.Version}
	)
	cmd := &cobra.Command{
		Use:   "inject -f FILENAME",
		Short: "Print pods and workloads as the webhook would inject them",
		Long: "inject reads pods and workloads (Job, CronJob, Deployment, StatefulSet,\n" +
			"ReplicaSet, DaemonSet, and Lists of them) and prints them with every driver\n" +
			"pod and driver pod template injected. It reports each object on standard\n" +
			"error as \"kind/name: injected\", \"skipped (reason)\" or \"refused (reason)\".\n\n" +
			"The policy is read from the cluster (the chart's ConfigMap) unless --policy\n" +
			"or --ignore-cluster is given.",
		Example: "  sparklet inject -f pod.yaml | kubectl apply -f -\n" +
			"  sparklet inject -f manifests/ -R --policy policy.yaml -o json\n" +
			"  kubectl get pod spark-pi -o yaml | sparklet inject -f - --ignore-cluster",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return usageError{errors.New("-f/--filename is required: a file, a directory, or - for standard input")}
			}
			if o := opts.Output; o != "yaml" && o != "json" {
				return usageError{fmt.Errorf("--output must be yaml or json, got %q", o)}
			}
			opts.NamespaceExplicit = cmd.Flags().Changed("namespace")
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			if !pol.offline() {
				client, ns, err := kube.client()
				if err != nil {
					return fmt.Errorf("%w; work offline with --policy FILE or --ignore-cluster", err)
				}
				if !opts.NamespaceExplicit {
					opts.Namespace = ns
				}
				if opts.Policy, _, err = pol.load(ctx, client); err != nil {
					return err
				}
			} else {
				var err error
				if opts.Policy, _, err = pol.load(ctx, nil); err != nil {
					return err
				}
			}
			inputs, closeAll, err := openInputs(files, recursive, a.stdin)
			defer closeAll()
			if err != nil {
				return err
			}
			opts.Report = a.stderr
			return inject.RunInputs(inputs, a.stdout, opts)
		},
	}
	fs := cmd.Flags()
	fs.StringSliceVarP(&files, "filename", "f", nil, "files or directories of YAML or JSON to inject; - for standard input (repeatable)")
	fs.BoolVarP(&recursive, "recursive", "R", false, "walk the directories given with -f recursively")
	fs.StringVarP(&opts.Output, "output", "o", "yaml", "yaml or json (several objects as a List)")
	fs.StringVarP(&opts.Namespace, "namespace", "n", "", "namespace for objects that name none (default: the kubeconfig context's, offline \"default\")")
	fs.StringVar(&opts.AppID, "app-id", "", "use this application id instead of a generated one")
	kube.register(fs)
	pol.register(fs)
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.MarkFlagFilename("policy", "yaml", "yml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"yaml", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// manifestExtensions are the files a directory contributes, as in kubectl.
var manifestExtensions = []string{".yaml", ".yml", ".json"}

// openInputs opens the -f arguments in order: "-" is standard input (once),
// a directory contributes its .yaml, .yml and .json files in name order
// (all levels with recursive), a file is read whatever its extension.
func openInputs(names []string, recursive bool, stdin io.Reader) ([]inject.Input, func(), error) {
	var inputs []inject.Input
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	open := func(path string) error {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("-f: %w", err)
		}
		files = append(files, f)
		inputs = append(inputs, inject.Input{Name: path, R: f})
		return nil
	}
	sawStdin := false
	for _, name := range names {
		if name == "-" {
			if sawStdin {
				return nil, closeAll, usageError{errors.New("-f - (standard input) can be given only once")}
			}
			sawStdin = true
			inputs = append(inputs, inject.Input{Name: "-", R: stdin})
			continue
		}
		info, err := os.Stat(name)
		if err != nil {
			return nil, closeAll, fmt.Errorf("-f: %w", err)
		}
		if !info.IsDir() {
			if err := open(name); err != nil {
				return nil, closeAll, err
			}
			continue
		}
		var paths []string
		err = filepath.WalkDir(name, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != name && !recursive {
					return filepath.SkipDir
				}
				return nil
			}
			if slices.Contains(manifestExtensions, strings.ToLower(filepath.Ext(path))) {
				paths = append(paths, path)
			}
			return nil
		})
		if err != nil {
			return nil, closeAll, fmt.Errorf("-f %s: %w", name, err)
		}
		if len(paths) == 0 {
			return nil, closeAll, fmt.Errorf("-f %s: no .yaml, .yml or .json files in the directory", name)
		}
		for _, p := range paths {
			if err := open(p); err != nil {
				return nil, closeAll, err
			}
		}
	}
	return inputs, closeAll, nil
}
