package policy

import (
	"fmt"
	"path"
	"strings"

	"github.com/distribution/reference"
)

// Image patterns are path.Match patterns over normalised references, so
// that "apache/spark:*", "docker.io/apache/spark:*" and
// "index.docker.io/apache/spark:*" mean the same images, as do "spark:*"
// and "docker.io/library/spark:*". An image without tag or digest is
// matched as :latest, the tag a kubelet pulls; an image with a digest
// also matches patterns written for its name@digest alone. A pattern whose
// first component holds a wildcard ("*", "*/spark:*") is matched as
// written against both the normalised and the familiar ("spark:3.5")
// spellings.

// normalizePattern gives a pattern the registry and library/ path that a
// reference without them gets (github.com/distribution/reference's
// ParseNormalizedNamed rules: a first component with no '.' or ':' that
// is not "localhost" is a Docker Hub path).
func normalizePattern(p string) string {
	first, rest, hasSlash := strings.Cut(p, "/")
	if strings.ContainsAny(first, "*?[") {
		return p // a wildcard registry: matched as written
	}
	if hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost") {
		if first == "index.docker.io" {
			first = "docker.io"
		}
		if first == "docker.io" && !strings.Contains(rest, "/") {
			rest = "library/" + rest
		}
		return first + "/" + rest
	}
	if !hasSlash {
		return "docker.io/library/" + p
	}
	return "docker.io/" + p
}

// imageForms returns the spellings of an image a pattern may match: the
// normalised name:tag[@digest], the familiar one, and with a digest
// name:tag and name@digest.
func imageForms(image string) ([]string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return nil, fmt.Errorf("image %q is not a valid image reference: %w", image, err)
	}
	named = reference.TagNameOnly(named)
	forms := []string{named.String(), reference.FamiliarString(named)}
	name := named.Name()
	tagged, hasTag := named.(reference.Tagged)
	digested, hasDigest := named.(reference.Digested)
	if hasTag && hasDigest {
		forms = append(forms, name+":"+tagged.Tag(), name+"@"+digested.Digest().String())
	}
	return forms, nil
}

// matchImage reports whether image matches one of patterns.
func matchImage(patterns []string, image string) (bool, error) {
	forms, err := imageForms(image)
	if err != nil {
		return false, err
	}
	for _, p := range patterns {
		np := normalizePattern(p)
		for _, f := range forms {
			if ok, _ := path.Match(np, f); ok {
				return true, nil
			}
		}
	}
	return false, nil
}
