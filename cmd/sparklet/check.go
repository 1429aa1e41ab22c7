//go:build !sidecaronly

package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

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
			return checkTarget(ctx, a.stdout, opts, ns, args)
		},
	}
	// Completion lists the namespace's pods and the cluster's namespaces.
	cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return completeNames(&kube, func(client kubernetes.Interface, ctxNS string) ([]string, error) {
			if cmd.Flags().Changed("namespace") {
				ctxNS = namespace
			}
			return podNames(client, ctxNS)
		})
	}
	fs := cmd.Flags()
	fs.StringVarP(&namespace, "namespace", "n", "", "the namespace (default: the kubeconfig context's)")
	_ = cmd.RegisterFlagCompletionFunc("namespace", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return completeNames(&kube, func(client kubernetes.Interface, _ string) ([]string, error) { return namespaceNames(client) })
	})
	fs.StringVar(&opts.WebhookConfig, "webhook-config", "", "only this MutatingWebhookConfiguration (default: every one with a "+check.WebhookName+" webhook)")
	fs.IntVar(&opts.Events, "events", 10, "how many of a driver pod's last Events to show")
	kube.register(fs)
	pol.register(fs)
	return cmd
}

// checkTarget checks what the command line names: the namespace ns when it
// names nothing, else a pod (POD, pod/POD) or a namespace (namespace/NAME).
func checkTarget(ctx context.Context, w io.Writer, opts check.Options, ns string, args []string) error {
	if len(args) == 0 {
		_, err := check.Namespace(ctx, w, opts, ns)
		return err
	}
	kind, name, found := strings.Cut(args[0], "/")
	if !found {
		kind, name = "pod", args[0]
	}
	var err error
	switch strings.ToLower(kind) {
	case "pod", "pods", "po":
		_, err = check.Pod(ctx, w, opts, ns, name)
	case "namespace", "namespaces", "ns":
		_, err = check.Namespace(ctx, w, opts, name)
	default:
		return usageError{fmt.Errorf("%q: check takes a pod or a namespace, not a %s", args[0], kind)}
	}
	return err
}

// completeNames answers a shell completion with the names list finds
// through the cluster kube points at (and its context's namespace); on any
// error, with none.
func completeNames(kube *kubeFlags, list func(client kubernetes.Interface, ctxNS string) ([]string, error)) ([]string, cobra.ShellCompDirective) {
	client, ctxNS, err := kube.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	names, err := list(client, ctxNS)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// podNames lists the names of the pods in namespace ns.
func podNames(client kubernetes.Interface, ns string) ([]string, error) {
	list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return names(list.Items), nil
}

// namespaceNames lists the names of the cluster's namespaces.
func namespaceNames(client kubernetes.Interface) ([]string, error) {
	list, err := client.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return names(list.Items), nil
}

// names returns the names of a list's items.
func names[T any, P interface {
	*T
	GetName() string
}](items []T) []string {
	out := make([]string, 0, len(items))
	for i := range items {
		out = append(out, P(&items[i]).GetName())
	}
	return out
}
