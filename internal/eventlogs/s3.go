package eventlogs

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 is a bucket of an S3-compatible store, reached with minio-go: a
// well-kept S3 client with SigV4 signing and few dependencies.
type S3 struct {
	client *minio.Client
	bucket string
}

// S3Config says where the bucket is and where its credential's files are:
// a directory holding AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// optionally AWS_SESSION_TOKEN, as a mounted Secret has them. They are
// read again each minute, so a rotated Secret is picked up.
type S3Config struct {
	Endpoint      string // https://host[:port] or http://host[:port]
	Bucket        string
	Region        string
	CredentialDir string
	Transport     http.RoundTripper // nil for minio-go's default
}

// NewS3 returns the bucket's store. It does not contact the store.
func NewS3(c S3Config) (*S3, error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("S3 endpoint %q: want https://host[:port]", c.Endpoint)
	}
	region := c.Region
	if region == "" {
		region = "us-east-1"
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:     credentials.New(&fileCredentials{dir: c.CredentialDir}),
		Secure:    u.Scheme == "https",
		Region:    region,
		Transport: c.Transport,
		// The shipper retries with its own backoff.
		MaxRetries: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("S3 client for %s: %w", c.Endpoint, err)
	}
	return &S3{client: client, bucket: c.Bucket}, nil
}

// Put uploads one object; event files are at most a few hundred MiB, and
// minio-go turns a large one into a multipart upload.
func (s *S3) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	_, err := s.client.PutObject(ctx, s.bucket, key, body, size, minio.PutObjectOptions{ContentType: "application/octet-stream"})
	return permanent(err)
}

// Object is one object of the bucket, as listed.
type Object struct {
	Key      string
	Size     int64
	Modified time.Time
}

// List lists every object under prefix, as `sparklet history-sync` reads
// the bucket.
func (s *S3) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, permanent(o.Err)
		}
		out = append(out, Object{Key: o.Key, Size: o.Size, Modified: o.LastModified})
	}
	return out, nil
}

// Get reads one object; the error of a failed request comes from Read.
func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	o, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, permanent(err)
	}
	return o, nil
}

// Delete removes one object; a missing one is no error.
func (s *S3) Delete(ctx context.Context, key string) error {
	return permanent(s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}))
}

// permanent marks with ErrPermanent the S3 errors that say the credential
// or the bucket is wrong.
func permanent(err error) error {
	switch minio.ToErrorResponse(err).Code {
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "NoSuchBucket", "InvalidBucketName":
		return fmt.Errorf("%w: %w", ErrPermanent, err)
	}
	return err
}

// fileCredentials reads the credential from a mounted Secret's files.
type fileCredentials struct {
	dir  string
	mu   sync.Mutex
	read time.Time
}

func (f *fileCredentials) Retrieve() (credentials.Value, error) {
	return f.RetrieveWithCredContext(nil)
}

func (f *fileCredentials) RetrieveWithCredContext(*credentials.CredContext) (credentials.Value, error) {
	get := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(f.dir, name))
		return strings.TrimSpace(string(b)), err
	}
	id, err := get("AWS_ACCESS_KEY_ID")
	if err != nil {
		return credentials.Value{}, fmt.Errorf("history store credential: %w", err)
	}
	secret, err := get("AWS_SECRET_ACCESS_KEY")
	if err != nil {
		return credentials.Value{}, fmt.Errorf("history store credential: %w", err)
	}
	token, _ := get("AWS_SESSION_TOKEN")
	f.mu.Lock()
	f.read = time.Now()
	f.mu.Unlock()
	return credentials.Value{AccessKeyID: id, SecretAccessKey: secret, SessionToken: token, SignerType: credentials.SignatureV4}, nil
}

func (f *fileCredentials) IsExpired() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Since(f.read) > time.Minute
}
