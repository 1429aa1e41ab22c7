package realspark

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sparklet/sparklet/hack/spark"
	testenv "github.com/sparklet/sparklet/test/env"
	"github.com/sparklet/sparklet/test/fileserver"
	"github.com/sparklet/sparklet/test/objectstore"
)

var (
	env      *testenv.Env
	dists    []spark.Dist
	files    *fileserver.Server
	store    *objectstore.Store
	storeErr error // why store is nil
)

func TestMain(m *testing.M) {
	var err error
	if dists, err = spark.Pinned(); err != nil {
		fmt.Fprintf(os.Stderr, "realspark: %v\n", err)
		os.Exit(1)
	}
	if os.Getenv("SPARKLET_E2E") == "1" {
		for _, d := range dists {
			if err := d.Installed(os.Getenv("SPARKLET_BIN_DIR")); err != nil {
				fmt.Fprintf(os.Stderr, "realspark: %v\n", err)
				os.Exit(1)
			}
		}
	}
	// The policy names the suite's file server, whose address is known
	// only once the pod runner has its bridge: serveFiles fills it in.
	policyDir, err := os.MkdirTemp("", "sparklet-realspark-policy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	policy := filepath.Join(policyDir, "policy.yaml")
	if err := writePolicy(policy, policyFilesPrefix); err != nil {
		fmt.Fprintf(os.Stderr, "realspark: %v\n", err)
		os.Exit(1)
	}
	imageConf := filepath.Join(policyDir, "image-conf")
	if err := writeImageConf(imageConf); err != nil {
		fmt.Fprintf(os.Stderr, "realspark: %v\n", err)
		os.Exit(1)
	}
	code := testenv.Main(m, "realspark", testenv.Options{PolicyFile: policy, PodRunner: true, ImageConfDir: imageConf, ReapKeptExecutors: true}, func(e *testenv.Env) error {
		env = e
		// Only the event-log tests need the store; they fail without it.
		if store, storeErr = startStore(context.Background(), policyDir); storeErr != nil {
			fmt.Fprintf(os.Stderr, "realspark: no object store, the event-log tests will fail: %v\n", storeErr)
		}
		files, err = serveFiles(context.Background(), policy)
		return err
	})
	if store != nil {
		store.Stop()
	}
	if files != nil {
		files.Close()
	}
	os.RemoveAll(policyDir)
	os.Exit(code)
}
