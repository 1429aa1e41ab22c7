package realspark

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/sparklet/sparklet/test/fileserver"
)

// policyFilesPrefix is the placeholder for the file server's address in
// testdata/policy.yaml's fetch.allowedURLPrefixes.
const policyFilesPrefix = "http://suite-files.invalid/"

// writePolicy writes testdata/policy.yaml to path with prefix in place of
// policyFilesPrefix.
func writePolicy(path, prefix string) error {
	data, err := os.ReadFile("testdata/policy.yaml")
	if err != nil {
		return err
	}
	if !bytes.Contains(data, []byte(policyFilesPrefix)) {
		return fmt.Errorf("testdata/policy.yaml does not name %s", policyFilesPrefix)
	}
	data = bytes.ReplaceAll(data, []byte(policyFilesPrefix), []byte(prefix))
	if store != nil {
		data = bytes.ReplaceAll(data, []byte(policyStoreEndpoint), []byte(store.Endpoint))
	}
	return os.WriteFile(path, data, 0o644)
}

// serveFiles starts the file server on the pod runner's bridge and restarts
// the webhook with a policy that allows fetching from it.
func serveFiles(ctx context.Context, policyFile string) (*fileserver.Server, error) {
	s, err := fileserver.Start(env.Runner.HostIP())
	if err != nil {
		return nil, err
	}
	if err := writePolicy(policyFile, s.Prefix()); err != nil {
		s.Close()
		return nil, err
	}
	env.StopWebhook()
	if err := env.StartWebhook(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}
