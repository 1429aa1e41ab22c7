package test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of the sparklet binary may be,
// from its func line to its closing brace: one screen, read at once.
const maxFuncLines = 80

// TestFunctionLength fails on a function over maxFuncLines lines in the
// non-test files of a package outside the harness (test/..., hack/...,
// bench), whatever its build tags.
func TestFunctionLength(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	for _, p := range listModule(t) {
		rel, ok := relative(p.ImportPath)
		if !ok || matchAny(harnessUsers, rel) {
			continue
		}
		for _, name := range append(p.GoFiles, p.IgnoredGoFiles...) {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files++
			for _, problem := range longFunctions(fset, f, maxFuncLines) {
				t.Errorf("%s/%s", rel, problem)
			}
		}
	}
	if files < 50 {
		t.Fatalf("read %d files of the sparklet binary", files)
	}
}

// TestFunctionLengthCheckerRejects shows the check failing on a long
// function, and passing one exactly at the limit.
func TestFunctionLengthCheckerRejects(t *testing.T) {
	src := "package p\n\nfunc short() {\n" + strings.Repeat("\t_ = 1\n", 78) + "}\n\n" +
		"func (x *T) long() {\n" + strings.Repeat("\t_ = 1\n", 79) + "}\n\ntype T struct{}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := longFunctions(fset, f, 80)
	want := "p.go:84: long is 81 lines; split it where a reader would (at most 80)"
	if len(got) != 1 || got[0] != want {
		t.Errorf("longFunctions = %q, want [%q]", got, want)
	}
}

// longFunctions returns the functions and methods of f longer than max
// lines, function literals counted in the function that holds them.
func longFunctions(fset *token.FileSet, f *ast.File, max int) []string {
	var problems []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start := fset.Position(fd.Pos())
		if n := fset.Position(fd.End()).Line - start.Line + 1; n > max {
			problems = append(problems, fmt.Sprintf("%s:%d: %s is %d lines; split it where a reader would (at most %d)", filepath.Base(start.Filename), start.Line, fd.Name.Name, n, max))
		}
	}
	return problems
}
