package test

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestDocLinks checks every relative link in the repository's Markdown
// (README.md, docs/, the chart's README, bench results), every Go file it
// cites in backquotes, and every path the comments of the examples and
// the chart cite: the file exists, and a #anchor names a heading of the
// file it points into.
func TestDocLinks(t *testing.T) {
	docs := map[string]string{} // path relative to the repository: text
	var commented []string      // YAML files whose comments cite paths
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != ".." && skipDir(d.Name()) {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel("..", p)
		rel = filepath.ToSlash(rel)
		switch {
		case strings.HasSuffix(rel, ".md"):
			text, err := os.ReadFile(p)
			docs[rel] = string(text)
			return err
		case (path.Dir(rel) == "examples" || strings.HasPrefix(rel, "charts/")) && strings.HasSuffix(rel, ".yaml"):
			commented = append(commented, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := docs["docs/architecture.md"]; !ok {
		t.Fatalf("found no docs/architecture.md among %d Markdown files", len(docs))
	}
	exists := func(rel string) bool {
		_, err := os.Stat(filepath.Join("..", filepath.FromSlash(rel)))
		return err == nil
	}
	tops, err := topDirs()
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range checkLinks(docs, tops, exists) {
		t.Error(problem)
	}
	for _, y := range commented {
		text, err := os.ReadFile(filepath.Join("..", y))
		if err != nil {
			t.Fatal(err)
		}
		for _, cited := range citedPaths(string(text), tops) {
			if !exists(cited) {
				t.Errorf("%s cites %s, which does not exist", y, cited)
			}
		}
	}
}

// TestDocLinksCheckerRejects feeds the link checker links that are broken
// in every way it knows, and ones that are not.
func TestDocLinksCheckerRejects(t *testing.T) {
	docs := map[string]string{
		"README.md": "# Title\n\nSee [a](docs/a.md), [b's part](docs/a.md#the-parts-name), [top](#title), " +
			"[web](https://example.com/x.md#y), [chart](charts/values.yaml) and `[not](a link)`.\n\n" +
			"```\n[in a fence](nowhere.md)\n```\n\n" +
			"Broken: [gone](docs/gone.md), [no part](docs/a.md#no-such-part), [no top](#nothing).\n",
		"docs/a.md": "# A\n\n## The part's name\n\n## Repeated\n\n## Repeated\n\n" +
			"[back](../README.md#title), [second](#repeated-1), [third](#repeated-2), [up](../charts/gone.yaml).\n" +
			"In `sidecar/watch.go` and `sidecar/gone.go`, not `sidecar/...` nor `other/x.go`.\n",
	}
	files := []string{"README.md", "docs/a.md", "charts/values.yaml", "sidecar/watch.go"}
	tops := []string{"charts", "docs", "sidecar"}
	exists := func(rel string) bool { return slices.Contains(files, rel) }
	want := []string{
		"README.md:9: docs/gone.md does not exist",
		"README.md:9: docs/a.md has no heading #no-such-part",
		"README.md:9: README.md has no heading #nothing",
		"docs/a.md:9: docs/a.md has no heading #repeated-2",
		"docs/a.md:9: charts/gone.yaml does not exist",
		"docs/a.md:10: sidecar/gone.go does not exist",
	}
	wantProblems(t, checkLinks(docs, tops, exists), want)
	if got := citedPaths("# see docs/policy.md and charts/sparklet/values.yaml.\nkind: Pod # docs/x.md, not other/y.md\n", tops); !slices.Equal(got, []string{"docs/policy.md", "charts/sparklet/values.yaml", "docs/x.md"}) {
		t.Errorf("citedPaths = %v", got)
	}
}

var (
	// inlineLink is [text](target) or [text](target "title").
	inlineLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// codeSpan is inline code, where brackets are not links.
	codeSpan = regexp.MustCompile("`[^`]*`")
	// repoPath is a path that may be one into the repository.
	repoPath = regexp.MustCompile(`\b[a-z0-9_-]+/[A-Za-z0-9_./-]*[A-Za-z0-9_]`)
	// goFileSpan is a Go file's path in backquotes.
	goFileSpan = regexp.MustCompile("`([a-z0-9_-]+/[A-Za-z0-9_./-]*\\.go)`")
)

// checkLinks returns every relative link in docs (path: text) that points
// to no file, or to a heading its target does not have, and every Go file
// under one of the top directories tops that a doc cites and that does not
// exist.
func checkLinks(docs map[string]string, tops []string, exists func(rel string) bool) []string {
	var problems []string
	anchors := map[string][]string{}
	for doc, text := range docs {
		anchors[doc] = headingAnchors(text)
	}
	var paths []string
	for doc := range docs {
		paths = append(paths, doc)
	}
	slices.Sort(paths)
	for _, doc := range paths {
		for n, line := range proseLines(docs[doc]) {
			if line == "" {
				continue
			}
			for _, m := range inlineLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
				if problem := checkLink(doc, m[1], anchors, exists); problem != "" {
					problems = append(problems, fmt.Sprintf("%s:%d: %s", doc, n+1, problem))
				}
			}
			for _, m := range goFileSpan.FindAllStringSubmatch(line, -1) {
				if underAny(m[1], tops) && !exists(m[1]) {
					problems = append(problems, fmt.Sprintf("%s:%d: %s does not exist", doc, n+1, m[1]))
				}
			}
		}
	}
	return problems
}

// checkLink checks one link target found in doc.
func checkLink(doc, target string, anchors map[string][]string, exists func(rel string) bool) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	rel := doc
	if file != "" {
		rel = path.Join(path.Dir(doc), file)
		if !exists(rel) {
			return rel + " does not exist"
		}
	}
	if anchor == "" || !strings.HasSuffix(rel, ".md") {
		return ""
	}
	if !slices.Contains(anchors[rel], anchor) {
		return fmt.Sprintf("%s has no heading #%s", rel, anchor)
	}
	return ""
}

// proseLines returns the lines of a Markdown text with those inside fenced
// code blocks blanked, so line numbers stay true.
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	fenced := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			lines[i] = ""
		} else if fenced {
			lines[i] = ""
		}
	}
	return lines
}

// headingAnchors returns the anchors GitHub gives a Markdown text's
// headings: lower case, punctuation dropped, spaces as hyphens, and a
// repeated one numbered from -1.
func headingAnchors(text string) []string {
	var anchors []string
	seen := map[string]int{}
	for _, line := range proseLines(text) {
		heading, ok := strings.CutPrefix(line, "#")
		if !ok {
			continue
		}
		heading = strings.TrimLeft(heading, "#")
		if !strings.HasPrefix(heading, " ") {
			continue
		}
		slug := slugify(strings.TrimSpace(heading))
		if n := seen[slug]; n > 0 {
			anchors = append(anchors, fmt.Sprintf("%s-%d", slug, n))
		} else {
			anchors = append(anchors, slug)
		}
		seen[slug]++
	}
	return anchors
}

// slugify is GitHub's anchor for a heading's text.
func slugify(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// citedPaths returns the paths under the top directories tops that a
// YAML file's comments name.
func citedPaths(text string, tops []string) []string {
	var paths []string
	for _, line := range strings.Split(text, "\n") {
		if _, comment, ok := strings.Cut(line, "#"); ok {
			for _, p := range repoPath.FindAllString(comment, -1) {
				if underAny(p, tops) {
					paths = append(paths, p)
				}
			}
		}
	}
	return paths
}

// underAny reports whether rel is under one of the directories tops.
func underAny(rel string, tops []string) bool {
	top, _, _ := strings.Cut(rel, "/")
	return slices.Contains(tops, top)
}

// topDirs returns the repository's top-level directories, hidden ones and
// build output aside.
func topDirs() ([]string, error) {
	entries, err := os.ReadDir("..")
	if err != nil {
		return nil, err
	}
	var tops []string
	for _, e := range entries {
		if e.IsDir() && !skipDir(e.Name()) {
			tops = append(tops, e.Name())
		}
	}
	return tops, nil
}
