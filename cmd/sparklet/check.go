//go:build !sidecaronly

package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sparklet/sparklet/check"
	"github.com/sparklet/sparklet/internal/version"
)

func newCheckCmd(a *app) *cobra.Command {
	var (
		kube      kubeFlags
		pol       policyFlags
		namespace string
		opts      = check.Options{Version: version.Version}
	)
	cmd := &cobra.Command{
		Use:   "check [POD | pod/POD | namespace/NAME]",
		Short: "Say whether a namespace's or a pod's drivers are injected, and why not",
		Long: "check reads the cluster, as istioctl x check-inject does. For a namespace\n" +
			"(the default: -n, else the kubeconfig context's) it says whether driver pods\n" +
			"created there will be injected, by which webhook and policy, and what is\n" +
			"missing if not. For a pod it says whether it was injected and, if not, why\n" +
			"and whether it would be now; for an injected driver it shows the sidecar's\n" +
			"state, the executors by phase and the pod's last Events.",
		Example: "  sparklet check -n spark-jobs\n" +
			"  sparklet check spark-pi -n spark-jobs\n" +
			"  sparklet check pod/spark-pi --policy policy.yaml",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{fmt.Errorf("unexpected argument %q: %q checks one pod or namespace", args[1], cmd.CommandPath())}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			client, ctxNS, err := kube.client()
			if err != nil {
				return err
			}
			ns := ctxNS
			if cmd.Flags().Changed("namespace") {
				ns = namespace
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			opts.Client = client
			opts.Policy, opts.PolicySource, opts.PolicyError = pol.load(ctx, client)
			if len(args) == 0 {
				_, err := check.Namespace(ctx, a.stdout, opts, ns)
				return err
			}
			kind, name, found := strings.Cut(args[0], "/")
			if !found {
				kind, name = "pod", args[0]
			}
			switch strings.ToLower(kind) {
			case "pod", "pods", "po":
				_, err = check.Pod(ctx, a.stdout, opts, ns, name)
			case "namespace", "namespaces", "ns":
				_, err = check.Namespace(ctx, a.stdout, opts, name)
			default:
				return usageError{fmt.Errorf("%q: check takes a pod or a namespace, not a %s", args[0], kind)}
			}
			return err
		},
	}
	// Completion lists the namespace's pods and the cluster's namespaces.
	cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		client, ctxNS, err := kube.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		if cmd.Flags().Changed("namespace") {
			ctxNS = namespace
		}
		pods, err := client.CoreV1().Pods(ctxNS).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		names := make([]string, 0, len(pods.Items))
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
	fs := cmd.Flags()
	fs.StringVarP(&namespace, "namespace", "n", "", "the namespace (default: the kubeconfig context's)")
	_ = cmd.RegisterFlagCompletionFunc("namespace", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		client, _, err := kube.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		list, err := client.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		names := make([]string, 0, len(list.Items))
		for _, n := range list.Items {
			names = append(names, n.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	fs.StringVar(&opts.WebhookConfig, "webhook-config", "", "only this MutatingWebhookConfiguration (default: every one with a "+check.WebhookName+" webhook)")
	fs.IntVar(&opts.Events, "events", 10, "how many of a driver pod's last Events to show")
	kube.register(fs)
	pol.register(fs)
	return cmd
}
