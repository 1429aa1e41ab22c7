package test

import (
	"fmt"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPackageDocs fails on a package of the module whose doc comment is
// not in its doc.go, or is also in another file.
func TestPackageDocs(t *testing.T) {
	for _, p := range listModule(t) {
		rel, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		documented, err := documentedFiles(p.Dir, slices.Concat(p.GoFiles, p.IgnoredGoFiles, p.TestGoFiles, p.XTestGoFiles))
		if err != nil {
			t.Fatal(err)
		}
		if problem := packageDocProblem(documented); problem != "" {
			t.Errorf("%s: %s", rel, problem)
		}
	}
}

// TestPackageDocsCheckerRejects shows the check failing on a missing, a
// misplaced and a repeated doc comment.
func TestPackageDocsCheckerRejects(t *testing.T) {
	for _, c := range []struct {
		documented []string
		want       string
	}{
		{[]string{"doc.go"}, ""},
		{nil, "no package doc: write it in doc.go"},
		{[]string{"handler.go"}, "the package doc is in handler.go; move it to doc.go"},
		{[]string{"doc.go", "handler.go"}, "the package doc is in doc.go and handler.go; keep only doc.go's"},
	} {
		if got := packageDocProblem(c.documented); got != c.want {
			t.Errorf("packageDocProblem(%q) = %q, want %q", c.documented, got, c.want)
		}
	}
}

// packageDocProblem says what is wrong with a package whose doc comments
// are in the files documented, or "" when it has one, in doc.go.
func packageDocProblem(documented []string) string {
	switch {
	case len(documented) == 0:
		return "no package doc: write it in doc.go"
	case !slices.Contains(documented, "doc.go"):
		return fmt.Sprintf("the package doc is in %s; move it to doc.go", listing(documented))
	case len(documented) > 1:
		return fmt.Sprintf("the package doc is in %s; keep only doc.go's", listing(documented))
	}
	return ""
}

// documentedFiles returns those of a directory's files that carry a
// package doc comment, sorted.
func documentedFiles(dir string, files []string) ([]string, error) {
	var documented []string
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			return nil, err
		}
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			documented = append(documented, name)
		}
	}
	slices.Sort(documented)
	return documented, nil
}
