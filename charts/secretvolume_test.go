package charts

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sparklet/sparklet/test/cluster"
)

// projectSecret plays the kubelet's Secret volume for a webhook run as a
// local process: it writes the keys of Secret ns/name into dir now, and
// again each time the Secret changes until ctx ends. As the kubelet's
// AtomicWriter does (kubernetes v1.37, pkg/volume/util/atomic_writer.go),
// the files go into a new hidden directory, the symlink ..data is swapped
// to it in one rename, and each key is a symlink through ..data, so that a
// reader sees all the old files or all the new ones. done is closed when
// the projection has stopped.
func projectSecret(ctx context.Context, c *cluster.Cluster, ns, name, dir string) (done <-chan struct{}, err error) {
	secrets := c.Client().CoreV1().Secrets(ns)
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if err := writeVolume(dir, s.Data); err != nil {
		return nil, err
	}
	last := s.Data
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, false, func(ctx context.Context) (bool, error) {
			s, err := secrets.Get(ctx, name, metav1.GetOptions{})
			if err != nil || maps.EqualFunc(s.Data, last, func(a, b []byte) bool { return string(a) == string(b) }) {
				return false, nil
			}
			if err := writeVolume(dir, s.Data); err != nil {
				return false, err
			}
			last = s.Data
			return false, nil
		})
	}()
	return stopped, nil
}

func writeVolume(dir string, data map[string][]byte) error {
	ts, err := os.MkdirTemp(dir, "..data-")
	if err != nil {
		return err
	}
	for key, value := range data {
		if err := os.WriteFile(filepath.Join(ts, key), value, 0o600); err != nil {
			return err
		}
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		return fmt.Errorf("swap ..data: %w", err)
	}
	for key := range data {
		link := filepath.Join(dir, key)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", key), link); err != nil {
				return err
			}
		}
	}
	if old != "" {
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}
