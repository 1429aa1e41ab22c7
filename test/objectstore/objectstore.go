package objectstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/sparklet/sparklet/test/cluster"
	"github.com/sparklet/sparklet/test/ready"
)

// Store is a running store.
type Store struct {
	// Endpoint is http://host:port; AccessKey and SecretKey are its root
	// user's.
	Endpoint, AccessKey, SecretKey string
	dir                            string
	cmd                            *exec.Cmd
	done                           <-chan struct{}
	client                         *minio.Client
}

// Object is one object the store holds.
type Object struct {
	Key  string
	Size int64
}

// Start runs binDir/versitygw on host with its data under dir, with fresh
// random root keys, and returns once it answers its health check.
func Start(ctx context.Context, binDir, dir, host string) (*Store, error) {
	bin := filepath.Join(binDir, "versitygw")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("versitygw not found in %s: build it with hack/versitygw/build.sh (make versitygw-binary)", binDir)
	}
	root, meta := filepath.Join(dir, "root"), filepath.Join(dir, "meta")
	for _, d := range []string{root, meta} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	port, err := cluster.FreePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	s := &Store{Endpoint: "http://" + addr, AccessKey: "test" + randomHex(4), SecretKey: randomHex(20), dir: dir}
	s.cmd, s.done, err = cluster.Spawn(bin, []string{"--root", root, "--meta", meta, "--listen", addr,
		"--access", s.AccessKey, "--secret", s.SecretKey}, s.LogFile(), false)
	if err != nil {
		return nil, err
	}
	exited := func() error {
		select {
		case <-s.done:
			return fmt.Errorf("versitygw exited; log %s:\n%s", s.LogFile(), cluster.Tail(s.LogFile(), 20))
		default:
			return nil
		}
	}
	if err := ready.Wait(ctx, s.Endpoint+"/health", 100*time.Millisecond, 30*time.Second, exited); err != nil {
		s.Stop()
		return nil, fmt.Errorf("versitygw on %s: %w", addr, err)
	}
	s.client, err = minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""), Region: "us-east-1"})
	if err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// LogFile is the store's log.
func (s *Store) LogFile() string { return filepath.Join(s.dir, "versitygw.log") }

// MakeBucket creates a bucket.
func (s *Store) MakeBucket(ctx context.Context, bucket string) error {
	return s.client.MakeBucket(ctx, bucket, minio.MakeBucketOptions{})
}

// List lists the objects under prefix, sorted by key.
func (s *Store) List(ctx context.Context, bucket, prefix string) ([]Object, error) {
	var out []Object
	for o := range s.client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, o.Err
		}
		out = append(out, Object{Key: o.Key, Size: o.Size})
	}
	slices.SortFunc(out, func(a, b Object) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Get reads one object.
func (s *Store) Get(ctx context.Context, bucket, key string) ([]byte, error) {
	o, err := s.client.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, err
	}
	defer o.Close()
	return io.ReadAll(o)
}

// WriteCredentials writes the root user's keys into dir as a mounted
// Secret holds them: the files AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
func (s *Store) WriteCredentials(dir string) error {
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": s.AccessKey, "AWS_SECRET_ACCESS_KEY": s.SecretKey} {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v+"\n"), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops the store; its data stays under dir.
func (s *Store) Stop() {
	if s.cmd != nil {
		cluster.Terminate(s.cmd.Process.Pid, s.done)
		s.cmd = nil
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
