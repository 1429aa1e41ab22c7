package sparkimage

import "strings"

// parseReference splits an image reference into its repository, named in
// full as Docker names it ("spark" is docker.io/library/spark), and its tag.
// A digest is dropped: the local mapping goes by name and tag only.
func parseReference(image string) (repo, tag string) {
	ref, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref, tag = ref[:i], ref[i+1:]
	}
	first, rest, found := strings.Cut(ref, "/")
	switch {
	case !found:
		return "docker.io/library/" + ref, tag
	case first == "index.docker.io":
		ref = "docker.io/" + rest
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		ref = "docker.io/" + ref
	}
	if after, ok := strings.CutPrefix(ref, "docker.io/"); ok && !strings.Contains(after, "/") {
		ref = "docker.io/library/" + after
	}
	return ref, tag
}
