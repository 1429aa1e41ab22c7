package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// layer is a gzipped layer tarball on disk with what a manifest and a
// config say of it.
type layer struct {
	path    string  // the gzipped tar
	digest  v1.Hash // of the gzipped bytes
	diffID  v1.Hash // of the uncompressed tar
	size    int64   // of the gzipped bytes
	comment string  // the history entry's
}

// writeLayer writes the tar that fill writes, gzipped, to path, hashing
// both forms on the way.
func writeLayer(path, comment string, fill func(tw *tar.Writer) error) (layer, error) {
	f, err := os.Create(path)
	if err != nil {
		return layer{}, err
	}
	defer f.Close()
	gzHash, tarHash := sha256.New(), sha256.New()
	counted := &countingWriter{w: io.MultiWriter(f, gzHash)}
	gz, err := gzip.NewWriterLevel(counted, gzip.BestSpeed)
	if err != nil {
		return layer{}, err
	}
	tw := tar.NewWriter(io.MultiWriter(gz, tarHash))
	if err := fill(tw); err != nil {
		return layer{}, fmt.Errorf("layer %s: %w", comment, err)
	}
	if err := tw.Close(); err != nil {
		return layer{}, err
	}
	if err := gz.Close(); err != nil {
		return layer{}, err
	}
	if err := f.Close(); err != nil {
		return layer{}, err
	}
	return layer{path: path, digest: sum(gzHash), diffID: sum(tarHash), size: counted.n, comment: comment}, nil
}

func sum(h hash.Hash) v1.Hash {
	return v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", h.Sum(nil))}
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
