package test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// architectureDoc is the newcomer's map: its package table lists every
// package of the module, its job, what it imports from the project and the
// rule the layering test holds it to.
const architectureDoc = "docs/architecture.md"

// row is one package row of the table.
type row struct {
	line      int
	packages  []string // relative to the module
	imports   []string // from the project, outside _test.go files
	ownModule bool     // a module of its own, which go list does not see
	rule      string
}

func TestLayeringTable(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", architectureDoc))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parseTable(string(text))
	if err != nil {
		t.Fatalf("%s: %v", architectureDoc, err)
	}
	for _, problem := range checkTable(listModule(t), rows, ownModules(t)) {
		t.Errorf("%s: %s", architectureDoc, problem)
	}
}

// TestLayeringTableCheckerRejects feeds the table checker a table that
// has drifted from the module in every way it can, and one that has not.
func TestLayeringTableCheckerRejects(t *testing.T) {
	m := func(rel string) string { return module + "/" + rel }
	pkgs := []pkg{
		{ImportPath: m("patches"), Imports: []string{"fmt", m("policy"), "k8s.io/api/core/v1"}},
		{ImportPath: m("policy"), Imports: []string{m("fetch/spec")}},
		{ImportPath: m("fetch/spec")},
		{ImportPath: m("webhook"), Imports: []string{m("patches"), m("policy")}},
	}
	modules := []string{"hack/cluster"}
	good := `## Packages

| Package | Job | Imports from the project | Rule |
| --- | --- | --- | --- |
| **In the binary** | | | |
| ` + "`patches`" + ` | mutation | ` + "`policy`" + ` | ` + ruleText("patches") + ` |
| ` + "`policy`" + ` | the policy | ` + "`fetch/spec`" + ` | ` + ruleText("policy") + ` |
| ` + "`fetch/spec`" + ` | fetch | nothing | |
| ` + "`webhook`" + ` | admission | ` + "`policy`, `patches`" + ` | ` + ruleText("webhook") + ` |
| ` + "`hack/cluster`" + ` | binaries | (own module) | |

## Next
`
	rows, err := parseTable(good)
	if err != nil {
		t.Fatal(err)
	}
	if problems := checkTable(pkgs, rows, modules); len(problems) > 0 {
		t.Errorf("a table that matches the module was rejected: %v", problems)
	}
	bad := `## Packages

| Package | Job | Imports from the project | Rule |
| --- | --- | --- | --- |
| ` + "`patches`" + ` | mutation | ` + "`policy`, `internal/podpatch`" + ` | ` + ruleText("patches") + ` |
| ` + "`fetch/spec`" + ` | fetch | nothing | **nothing** |
| ` + "`webhook`" + ` | admission | ` + "`patches`" + ` | |
| ` + "`sidecar`" + ` | gone | nothing | |
| ` + "`hack/helm`" + ` | binaries | (own module) | |
`
	rows, err = parseTable(bad)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"policy is missing from the package table",
		"patches lists internal/podpatch, which it does not import",
		"fetch/spec's rule is",
		"webhook imports policy, which its row does not list",
		"webhook's rule is",
		"sidecar is in the package table, but go list does not find it",
		"hack/helm is in the package table as a module of its own, but it has no go.mod",
		"hack/cluster, a module of its own, is not in the package table as one",
	}
	wantProblems(t, checkTable(pkgs, rows, modules), want)
	for _, malformed := range []string{
		"# no table here\n",
		"## Packages\n\n| Package | Job | Imports from the project | Rule |\n| --- | --- | --- | --- |\n| `a` | job | `b`, c | |\n",
		"## Packages\n\n| Package | Job | Imports from the project | Rule |\n| --- | --- | --- | --- |\n| `a` | job | nothing |\n",
	} {
		if _, err := parseTable(malformed); err == nil {
			t.Errorf("parseTable(%q) accepted it", malformed)
		}
	}
}

// wantProblems fails t unless each of problems starts with one of want,
// in any order, and each of want begins one of them.
func wantProblems(t *testing.T, problems, want []string) {
	t.Helper()
	for _, w := range want {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, w) }) {
			t.Errorf("not reported: %s", w)
		}
	}
	if len(problems) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(problems), len(want), strings.Join(problems, "\n"))
	}
}

// checkTable returns every way the table and the module disagree.
func checkTable(pkgs []pkg, rows []row, modules []string) []string {
	var problems []string
	listed := map[string]row{}
	for _, r := range rows {
		for _, p := range r.packages {
			listed[p] = r
		}
	}
	found := map[string]bool{}
	for _, p := range pkgs {
		rel, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		found[rel] = true
		r, ok := listed[rel]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is missing from the package table", rel))
			continue
		}
		var imports []string
		for _, imp := range p.Imports {
			if ir, ok := relative(imp); ok {
				imports = append(imports, ir)
				if !slices.Contains(r.imports, ir) {
					problems = append(problems, fmt.Sprintf("%s imports %s, which its row does not list (line %d)", rel, ir, r.line))
				}
			}
		}
		for _, ir := range r.imports {
			if !slices.Contains(imports, ir) {
				problems = append(problems, fmt.Sprintf("%s lists %s, which it does not import (line %d)", rel, ir, r.line))
			}
		}
		if want := ruleText(rel); r.rule != want {
			problems = append(problems, fmt.Sprintf("%s's rule is %q; the layering test's is %q (line %d)", rel, r.rule, want, r.line))
		}
	}
	for _, r := range rows {
		for _, p := range r.packages {
			switch {
			case r.ownModule && !slices.Contains(modules, p):
				problems = append(problems, fmt.Sprintf("%s is in the package table as a module of its own, but it has no go.mod (line %d)", p, r.line))
			case !r.ownModule && !found[p]:
				problems = append(problems, fmt.Sprintf("%s is in the package table, but go list does not find it (line %d)", p, r.line))
			}
		}
	}
	for _, m := range modules {
		if r, ok := listed[m]; !ok || !r.ownModule {
			problems = append(problems, fmt.Sprintf("%s, a module of its own, is not in the package table as one", m))
		}
	}
	return problems
}

// ownModules returns the directories, relative to the module, that hold
// modules of their own.
func ownModules(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != ".." && skipDir(d.Name()) {
			return filepath.SkipDir
		}
		if d.Name() == "go.mod" && path != filepath.Join("..", "go.mod") {
			rel, _ := filepath.Rel("..", filepath.Dir(path))
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// skipDir reports whether a walk of the repository skips a directory:
// build output, caches, fixtures and hidden ones.
func skipDir(name string) bool {
	return name == "bin" || name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")
}

// ruleText is how the table states the rules the layering test holds rel
// to, in bold, or "" when there are none.
func ruleText(rel string) string {
	var parts []string
	for _, r := range pure {
		if r.pkg != rel {
			continue
		}
		project := "nothing"
		if len(r.project) > 0 {
			project = "only " + listing(quoted(r.project))
		}
		switch {
		case r.external == nil:
			parts = append(parts, project)
		case len(r.external) == 0:
			parts = append(parts, project+"; only the standard library")
		default:
			var ext []string
			for _, prefix := range r.external {
				ext = append(ext, "`"+prefix+"...`")
			}
			parts = append(parts, project+"; outside the project only "+listing(append([]string{"the standard library"}, ext...)))
		}
	}
	for _, pair := range apart {
		for _, ab := range [][2]string{pair, {pair[1], pair[0]}} {
			if base, _ := strings.CutSuffix(ab[0], "/..."); base == rel {
				parts = append(parts, "never `"+ab[1]+"`")
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "**" + strings.Join(parts, "; ") + "**"
}

func quoted(names []string) []string {
	var q []string
	for _, n := range names {
		q = append(q, "`"+n+"`")
	}
	return q
}

// listing joins items as prose: "a", "a and b", "a, b and c".
func listing(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

var backquoted = regexp.MustCompile("^`([^`]+)`$")

// parseTable reads the package rows of the table under "## Packages".
// Rows whose first cell is bold are section headings.
func parseTable(md string) ([]row, error) {
	lines := strings.Split(md, "\n")
	start := slices.Index(lines, "## Packages")
	if start < 0 {
		return nil, fmt.Errorf("no \"## Packages\" section")
	}
	var rows []row
	for i := start + 1; i < len(lines) && !strings.HasPrefix(lines[i], "## "); i++ {
		line := lines[i]
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| Package ") || strings.HasPrefix(line, "| --- ") || strings.HasPrefix(line, "| **") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 4 {
			return nil, fmt.Errorf("line %d has %d cells, want 4 (package, job, imports, rule)", i+1, len(cells))
		}
		r := row{line: i + 1, rule: strings.TrimSpace(cells[3])}
		var err error
		if r.packages, err = names(cells[0]); err != nil {
			return nil, fmt.Errorf("line %d, package: %w", i+1, err)
		}
		switch imports := strings.TrimSpace(cells[2]); imports {
		case "nothing":
		case "(own module)":
			r.ownModule = true
		default:
			if r.imports, err = names(imports); err != nil {
				return nil, fmt.Errorf("line %d, imports: %w (or \"nothing\", or \"(own module)\")", i+1, err)
			}
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no package rows under \"## Packages\"")
	}
	return rows, nil
}

// names reads a cell such as "`a`, `b`".
func names(cell string) ([]string, error) {
	var out []string
	for _, item := range strings.Split(strings.TrimSpace(cell), ", ") {
		m := backquoted.FindStringSubmatch(item)
		if m == nil {
			return nil, fmt.Errorf("%q is not a package in backquotes", item)
		}
		out = append(out, m[1])
	}
	return out, nil
}
