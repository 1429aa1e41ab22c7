package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// image is one image of an archive: its layers, bottom first, its config
// and the references it is tagged with.
type image struct {
	layers []layer
	config v1.Config
	labels map[string]string
	tags   []string
}

// written is what writeArchive reports of an image.
type written struct {
	tags     []string // normalised, e.g. docker.io/apache/spark:3.5.9
	manifest v1.Hash
	config   v1.Hash // the image ID
	size     int64   // of its layers, gzipped
}

// writeArchive writes images to out as an OCI image layout in a tarball
// (oci-layout, index.json, blobs/sha256/...) that also has Docker's
// manifest.json, as `docker save` since Docker 25 does: `ctr images
// import` reads the layout (keeping these manifests and their digests),
// `docker load` and `podman load` read manifest.json. Each blob is written
// once; the entries are in a fixed order and dated created, so the same
// images give the same bytes.
func writeArchive(out string, images []image, arch string, created time.Time) ([]written, error) {
	// A blob is in memory (configs, manifests) or in a file (layers).
	type blob struct {
		data []byte
		path string
	}
	var order []v1.Hash
	blobs := map[v1.Hash]blob{}
	add := func(h v1.Hash, b blob) {
		if _, ok := blobs[h]; !ok {
			order = append(order, h)
			blobs[h] = b
		}
	}
	index := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex}
	type dockerEntry struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	var docker []dockerEntry
	var result []written
	for _, img := range images {
		cfg := v1.ConfigFile{
			Architecture: arch, OS: "linux", Created: v1.Time{Time: created},
			Config: img.config,
			RootFS: v1.RootFS{Type: "layers"},
		}
		cfg.Config.Labels = img.labels
		manifest := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1}
		entry := dockerEntry{}
		w := written{}
		for _, l := range img.layers {
			cfg.RootFS.DiffIDs = append(cfg.RootFS.DiffIDs, l.diffID)
			cfg.History = append(cfg.History, v1.History{Created: v1.Time{Time: created}, CreatedBy: "hack/nodeimages", Comment: l.comment})
			manifest.Layers = append(manifest.Layers, v1.Descriptor{MediaType: types.OCILayer, Size: l.size, Digest: l.digest})
			add(l.digest, blob{path: l.path})
			entry.Layers = append(entry.Layers, blobPath(l.digest))
			w.size += l.size
		}
		cfgJSON, cfgHash, err := jsonBlob(cfg)
		if err != nil {
			return nil, err
		}
		add(cfgHash, blob{data: cfgJSON})
		manifest.Config = v1.Descriptor{MediaType: types.OCIConfigJSON, Size: int64(len(cfgJSON)), Digest: cfgHash}
		manJSON, manHash, err := jsonBlob(manifest)
		if err != nil {
			return nil, err
		}
		add(manHash, blob{data: manJSON})
		entry.Config = blobPath(cfgHash)
		w.manifest, w.config = manHash, cfgHash
		for _, tag := range img.tags {
			full, tagStr, err := normalize(tag)
			if err != nil {
				return nil, err
			}
			index.Manifests = append(index.Manifests, v1.Descriptor{
				MediaType: types.OCIManifestSchema1, Size: int64(len(manJSON)), Digest: manHash,
				Platform: &v1.Platform{Architecture: arch, OS: "linux"},
				Annotations: map[string]string{
					"io.containerd.image.name":          full,
					"org.opencontainers.image.ref.name": tagStr,
				},
			})
			entry.RepoTags = append(entry.RepoTags, full)
			w.tags = append(w.tags, full)
		}
		docker = append(docker, entry)
		result = append(result, w)
	}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return nil, err
	}
	dockerJSON, err := json.Marshal(docker)
	if err != nil {
		return nil, err
	}

	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp)
	defer f.Close()
	tw := tar.NewWriter(f)
	put := func(name string, size int64, r io.Reader) error {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size, ModTime: created, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: created, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
	}
	for _, h := range order {
		b := blobs[h]
		if b.path == "" {
			if err := put(blobPath(h), int64(len(b.data)), bytes.NewReader(b.data)); err != nil {
				return nil, err
			}
			continue
		}
		if err := putFile(put, blobPath(h), b.path); err != nil {
			return nil, err
		}
	}
	for _, meta := range []struct {
		name string
		data []byte
	}{{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)}, {"index.json", indexJSON}, {"manifest.json", dockerJSON}} {
		if err := put(meta.name, int64(len(meta.data)), bytes.NewReader(meta.data)); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return result, os.Rename(tmp, out)
}

func putFile(put func(string, int64, io.Reader) error, name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	return put(name, st.Size(), f)
}

// normalize names tag in full as containerd and the kubelet do
// (apache/spark:3.5.9 is docker.io/apache/spark:3.5.9), and returns its
// tag.
func normalize(tag string) (full, tagStr string, err error) {
	ref, err := name.NewTag(tag)
	if err != nil {
		return "", "", fmt.Errorf("tag %q: %w", tag, err)
	}
	registry := ref.RegistryStr()
	if registry == name.DefaultRegistry {
		registry = "docker.io"
	}
	return registry + "/" + ref.RepositoryStr() + ":" + ref.TagStr(), ref.TagStr(), nil
}

func blobPath(h v1.Hash) string { return filepath.ToSlash(filepath.Join("blobs", h.Algorithm, h.Hex)) }

func jsonBlob(v any) ([]byte, v1.Hash, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, v1.Hash{}, err
	}
	return data, v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", sha256.Sum256(data))}, nil
}
