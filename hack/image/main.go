// Command image builds sparklet's container image as a tarball without a
// container engine: the static sparklet binary as the one layer on an
// empty base, run as the non-root user 65532 with entrypoint /sparklet,
// the layout of the Dockerfile. Every timestamp is the given creation
// time and every owner root, so the same binary gives the same digest.
// The tarball is what `docker save` writes (manifest.json and the blobs,
// with OCI media types): `docker load`, `podman load`, `kind load
// image-archive` and `ctr images import` read it.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is distroless's nonroot user; the webhook runs the sidecar and the
// init container as it too.
const User = "65532:65532"

func main() {
	binary := flag.String("binary", "bin/sparklet", "the static sparklet binary")
	sidecarBinary := flag.String("sidecar-binary", "bin/sparklet-sidecar", "the static sidecar-only build of it (make build), which `sparklet sidecar` hands over to")
	out := flag.String("out", "bin/sparklet-image.tar", "the image tarball to write")
	tag := flag.String("tag", "", "the image reference recorded in the tarball, e.g. ghcr.io/sparklet/sparklet:0.1.0")
	version := flag.String("version", "dev", "the sparklet version (label org.opencontainers.image.version)")
	revision := flag.String("revision", "", "the commit (label org.opencontainers.image.revision)")
	source := flag.String("source", "https://github.com/sparklet/sparklet", "label org.opencontainers.image.source")
	epoch := flag.Int64("created", 0, "creation time in Unix seconds (SOURCE_DATE_EPOCH, e.g. the commit's time)")
	arch := flag.String("arch", "amd64", "the binary's architecture")
	flag.Parse()
	if flag.NArg() > 0 {
		fail(fmt.Errorf("unexpected arguments %q", flag.Args()))
	}
	if *tag == "" {
		fail(fmt.Errorf("--tag is required"))
	}
	digest, err := build(map[string]string{"sparklet": *binary, "sparklet-sidecar": *sidecarBinary}, *out, *tag, *arch, time.Unix(*epoch, 0).UTC(), map[string]string{
		"org.opencontainers.image.title":    "sparklet",
		"org.opencontainers.image.version":  *version,
		"org.opencontainers.image.revision": *revision,
		"org.opencontainers.image.source":   *source,
		"org.opencontainers.image.created":  time.Unix(*epoch, 0).UTC().Format(time.RFC3339),
	})
	if err != nil {
		fail(err)
	}
	fmt.Printf("%s %s %s\n", *out, *tag, digest)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "image:", err)
	os.Exit(1)
}

// build writes the image of binaries, each a file at the root named by
// its key.
func build(binaries map[string]string, out, tag, arch string, created time.Time, labels map[string]string) (v1.Hash, error) {
	ref, err := name.NewTag(tag)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("--tag %s: %w", tag, err)
	}
	files := map[string][]byte{}
	for name, path := range binaries {
		data, err := os.ReadFile(path)
		if err != nil {
			return v1.Hash{}, fmt.Errorf("the %s binary: %w", name, err)
		}
		files[name] = data
	}
	layerTar, err := binaryLayer(files, created)
	if err != nil {
		return v1.Hash{}, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerTar)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return v1.Hash{}, err
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer: layer,
		History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "sparklet binary (make image)",
			Comment: "the static sparklet binaries at /sparklet and /sparklet-sidecar"},
	})
	if err != nil {
		return v1.Hash{}, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return v1.Hash{}, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS, cfg.Created = arch, "linux", v1.Time{Time: created}
	cfg.Config.User = User
	cfg.Config.Entrypoint = []string{"/sparklet"}
	cfg.Config.Labels = labels
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return v1.Hash{}, err
	}
	if err := tarball.WriteToFile(out, ref, img); err != nil {
		return v1.Hash{}, fmt.Errorf("write %s: %w", out, err)
	}
	return img.Digest()
}

// binaryLayer is a tar of files at the root, in name order, owned by
// root, mode 0755, dated created.
func binaryLayer(files map[string][]byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		data := files[name]
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: int64(len(data)), ModTime: created, Format: tar.FormatPAX,
			PAXRecords: map[string]string{}}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
