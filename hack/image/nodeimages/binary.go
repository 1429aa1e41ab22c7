package main

import (
	"flag"
	"fmt"
	"os"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// binaryMain writes a one-layer image of one static binary that is its
// entrypoint: the pause image, the kubectl image.
func binaryMain(args []string) error {
	fs := flag.NewFlagSet("binary", flag.ContinueOnError)
	c := commonFlags(fs)
	binary := fs.String("binary", "", "the static binary")
	at := fs.String("path", "", "its absolute path in the image, the entrypoint")
	user := fs.String("user", "", "the image's user (uid:gid), empty for root")
	title := fs.String("title", "", "label org.opencontainers.image.title")
	version := fs.String("version", "", "label org.opencontainers.image.version")
	out := fs.String("out", "", "the image tarball to write")
	var tags multiFlag
	fs.Var(&tags, "tag", "a reference to tag the image with (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("binary: unexpected arguments %q", fs.Args())
	case *binary == "" || *out == "" || len(tags) == 0:
		return fmt.Errorf("binary: --binary, --out and --tag are required")
	case !path.IsAbs(*at):
		return fmt.Errorf("binary: --path %q must be absolute, e.g. /pause", *at)
	}
	if _, err := os.Stat(*binary); err != nil {
		return fmt.Errorf("binary: --binary: %w", err)
	}
	var files []file
	for dir := path.Dir(*at); dir != "/"; dir = path.Dir(dir) {
		files = append(files, file{name: strings.TrimPrefix(dir, "/") + "/", mode: 0o755})
	}
	files = append(files, file{name: strings.TrimPrefix(*at, "/"), src: *binary, mode: 0o755})
	l, err := writeLayer(*out+".layer", "the static binary "+*at, writeFiles(files, c.time()))
	if err != nil {
		return err
	}
	defer os.Remove(l.path)
	ws, err := writeArchive(*out, []image{{
		layers: []layer{l},
		config: v1.Config{Entrypoint: []string{*at}, User: *user},
		labels: labels(*title, *version, "built by sparklet's hack/nodeimages"),
		tags:   tags,
	}}, *c.arch, c.time())
	if err != nil {
		return err
	}
	report(*out, ws)
	return nil
}

// labels are the OCI annotations an image carries; an empty version is
// left out.
func labels(title, version, description string) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       title,
		"org.opencontainers.image.description": description,
		"org.opencontainers.image.source":      "https://github.com/sparklet/sparklet",
	}
	if version != "" {
		l["org.opencontainers.image.version"] = version
	}
	return l
}
