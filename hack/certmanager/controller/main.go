// Command cert-manager-controller runs cert-manager's controllers (those an
// Issuer, a ClusterIssuer and a Certificate need) as cert-manager's own
// controller does (cert-manager v1.21, cmd/controller/app/controller.go:
// one ContextFactory, each registered controller built from it and run,
// then the shared informers started), without leader election, metrics or
// ACME. cert-manager's cmd/controller is a module of its own that the
// module proxy does not serve, so this main is built on the root module's
// public packages alone.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// Each package registers its controllers with controller.Known().
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// defaultControllers are the ones the self-signed, CA and ClusterIssuer
// paths need, by their registered names.
const defaultControllers = "issuers,clusterissuers,certificates-trigger,certificates-issuing," +
	"certificates-key-manager,certificates-request-manager,certificates-readiness," +
	"certificates-revision-manager,certificaterequests-approver," +
	"certificaterequests-issuer-ca,certificaterequests-issuer-selfsigned"

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	clusterNamespace := flag.String("cluster-resource-namespace", "kube-system", "namespace of the Secrets ClusterIssuers refer to")
	controllers := flag.String("controllers", defaultControllers, "comma-separated controllers to run")
	workers := flag.Int("workers", 5, "workers per controller")
	logf.InitLogs()
	defer logf.FlushLogs()
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, "controller")
	if err := run(ctx, *kubeconfig, *clusterNamespace, strings.Split(*controllers, ","), *workers); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-controller:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, clusterNamespace string, names []string, workers int) error {
	// The option values are cert-manager v1.21's defaults
	// (internal/apis/config/controller/v1alpha1/defaults.go).
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controller.IssuerOptions{ClusterResourceNamespace: clusterNamespace},
		CertificateOptions: controller.CertificateOptions{
			CopiedAnnotationPrefixes:                 []string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"},
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
		SchedulerOptions: controller.SchedulerOptions{MaxConcurrentChallenges: 60},
	})
	if err != nil {
		return fmt.Errorf("context factory: %w", err)
	}
	shared, err := factory.Build()
	if err != nil {
		return fmt.Errorf("controller context: %w", err)
	}
	g, ctx := errgroup.WithContext(ctx)
	for _, name := range names {
		build, ok := controller.Known()[name]
		if !ok {
			return fmt.Errorf("--controllers: no controller %q; known here: %s", name, defaultControllers)
		}
		c, err := build(factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		g.Go(func() error { return c.Run(workers, ctx) })
	}
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	return g.Wait()
}
