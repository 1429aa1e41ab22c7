// Command versitygw is the Versity S3 Gateway over its posix backend: an
// S3-compatible object store whose buckets are directories under --root,
// started by the event-log tests (test/objectstore) on a loopback address.
// It runs the gateway as versitygw's own library entry point does
// (github.com/versity/versitygw v1.8.0, embedgw.RunVersityGW), which leaves
// out the Azure, S3-proxy and ScoutFS backends and the command-line tool
// that the module's cmd/versitygw links in. Object metadata goes to a
// directory beside the root (the backend's "sidecar" metadata store), so
// the root's file system needs no extended attributes.
//
// The root user's keys are --access and --secret, or else the environment's
// ROOT_ACCESS_KEY and ROOT_SECRET_KEY, as versitygw's own command reads them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/versity/versitygw/backend/meta"
	"github.com/versity/versitygw/backend/posix"
	"github.com/versity/versitygw/embedgw"
)

func main() {
	root := flag.String("root", "", "directory whose subdirectories are the buckets")
	metaDir := flag.String("meta", "", "directory for object metadata, outside --root")
	listen := flag.String("listen", "", "S3 API address, host:port")
	access := flag.String("access", os.Getenv("ROOT_ACCESS_KEY"), "the root user's access key id")
	secret := flag.String("secret", os.Getenv("ROOT_SECRET_KEY"), "the root user's secret key")
	flag.Parse()
	if err := run(*root, *metaDir, *listen, *access, *secret); err != nil {
		fmt.Fprintln(os.Stderr, "versitygw:", err)
		os.Exit(1)
	}
}

func run(root, metaDir, listen, access, secret string) error {
	if root == "" || metaDir == "" || listen == "" || access == "" || secret == "" {
		return fmt.Errorf("--root, --meta, --listen, --access and --secret are required")
	}
	store, err := meta.NewSideCar(metaDir)
	if err != nil {
		return fmt.Errorf("metadata dir %s: %w", metaDir, err)
	}
	be, err := posix.New(root, store, posix.PosixOpts{SideCarDir: metaDir})
	if err != nil {
		return fmt.Errorf("posix backend %s: %w", root, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return embedgw.RunVersityGW(ctx, be, &embedgw.Config{
		RootUserAccess: access,
		RootUserSecret: secret,
		Ports:          []string{listen},
		HealthPath:     "/health",
		Quiet:          true,
		// versitygw's own command's defaults (cmd/versitygw/main.go).
		MaxConnections:    250000,
		MaxRequests:       100000,
		MultipartMaxParts: 10000,
	})
}
