package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/sparklet/sparklet"

// The rules, as data. Paths are relative to the module; "x/..." matches x
// and every package under it. Only non-test imports count: a _test.go file
// may import anything.

// harness is the test harness and the developer tools under hack/.
// harnessUsers may depend on it: the harness itself and the commands built
// on it. No other package may.
var (
	harness      = []string{"test/...", "hack/..."}
	harnessUsers = []string{"test/...", "hack/...", "bench"}
)

// pure packages depend on no project package but those listed (directly
// or through them) and import, besides the standard library, only paths
// with the listed prefixes (any path when none are listed).
var pure = []purity{
	{pkg: "patches", project: []string{"policy", "fetch/spec", "patches/submitargs", "patches/sparkconf", "vocab"}, external: []string{"k8s.io/", "sigs.k8s.io/"}},
	{pkg: "patches/submitargs", project: []string{}, external: []string{}},
	{pkg: "patches/sparkconf", project: []string{}, external: []string{}},
	{pkg: "policy", project: []string{"fetch/spec", "patches/sparkconf", "vocab"}},
	{pkg: "vocab", project: []string{}, external: []string{}},
	// The schedulers run next to the control plane, never on sparklet's
	// own code, so what they decide is theirs.
	{pkg: "test/schedulers", project: []string{"test/cluster", "test/ready", "internal/certs"}},
	{pkg: "test/certmanager", project: []string{"test/cluster", "test/ready", "internal/certs"}},
	{pkg: "test/metricsserver", project: []string{"test/cluster", "test/ready", "internal/certs"}},
}

// apart are pairs of packages neither of which may depend on the other.
var apart = [][2]string{{"webhook/...", "sidecar/..."}}

type purity struct {
	pkg      string
	project  []string
	external []string
}

// pkg is what `go list` says of a package: its non-test imports, direct
// and transitive.
type pkg struct {
	ImportPath     string
	Dir            string
	GoFiles        []string
	IgnoredGoFiles []string // excluded by build constraints, such as sidecaronly
	TestGoFiles    []string
	XTestGoFiles   []string
	Imports        []string
	Deps           []string
}

func TestLayering(t *testing.T) {
	pkgs := listModule(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages of %s", len(pkgs), module)
	}
	for _, problem := range check(pkgs) {
		t.Error(problem)
	}
}

// TestLayeringCheckerRejects feeds the checker a module that breaks every
// rule, and one that keeps them.
func TestLayeringCheckerRejects(t *testing.T) {
	m := func(rel string) string { return module + "/" + rel }
	good := []pkg{
		{ImportPath: m("patches"), Imports: []string{"fmt", m("policy"), "k8s.io/api/core/v1"}, Deps: []string{"fmt", m("policy"), m("fetch/spec")}},
		{ImportPath: m("policy"), Imports: []string{m("fetch/spec"), "github.com/some/lib"}, Deps: []string{m("fetch/spec"), "github.com/some/lib"}},
		{ImportPath: m("patches/submitargs"), Imports: []string{"strings"}, Deps: []string{"strings"}},
		{ImportPath: m("patches/sparkconf"), Imports: []string{"strings"}, Deps: []string{"strings"}},
		{ImportPath: m("vocab"), Imports: []string{}, Deps: []string{}},
		{ImportPath: m("webhook"), Imports: []string{m("patches")}, Deps: []string{m("patches"), m("policy")}},
		{ImportPath: m("sidecar"), Imports: []string{m("patches")}, Deps: []string{m("patches")}},
		{ImportPath: m("bench"), Imports: []string{m("test/env")}, Deps: []string{m("test/env")}},
		{ImportPath: m("test/sparkimage"), Imports: []string{m("hack/spark")}, Deps: []string{m("hack/spark")}},
		{ImportPath: m("test/schedulers"), Imports: []string{m("test/cluster")}, Deps: []string{m("test/cluster"), m("internal/certs"), m("test/ready")}},
		{ImportPath: m("test/certmanager"), Imports: []string{m("test/cluster")}, Deps: []string{m("test/cluster"), m("internal/certs"), m("test/ready")}},
		{ImportPath: m("test/metricsserver"), Imports: []string{m("test/cluster")}, Deps: []string{m("test/cluster"), m("internal/certs"), m("test/ready")}},
	}
	if problems := check(good); len(problems) > 0 {
		t.Errorf("a module keeping the rules was rejected: %v", problems)
	}
	bad := []pkg{
		{ImportPath: m("patches"), Imports: []string{m("internal/podpatch"), "github.com/sirupsen/logrus"}, Deps: []string{m("internal/podpatch"), "github.com/sirupsen/logrus"}},
		{ImportPath: m("policy"), Imports: []string{m("internal/version")}, Deps: []string{m("internal/version")}},
		{ImportPath: m("patches/submitargs"), Imports: []string{"github.com/some/lib"}, Deps: []string{"github.com/some/lib"}},
		{ImportPath: m("patches/sparkconf"), Imports: []string{"strings"}, Deps: []string{"strings"}},
		{ImportPath: m("vocab"), Imports: []string{}, Deps: []string{}},
		{ImportPath: m("webhook"), Imports: []string{m("internal/shared")}, Deps: []string{m("internal/shared"), m("sidecar/api")}},
		{ImportPath: m("sidecar/api"), Imports: []string{m("webhook")}, Deps: []string{m("webhook")}},
		{ImportPath: m("cmd/sparklet"), Imports: []string{m("webhook")}, Deps: []string{m("webhook"), m("test/verify"), m("hack/spark")}},
		{ImportPath: m("test/schedulers"), Imports: []string{m("test/cluster"), m("patches")}, Deps: []string{m("test/cluster"), m("patches")}},
		{ImportPath: m("test/certmanager"), Imports: []string{m("webhook")}, Deps: []string{m("webhook")}},
		{ImportPath: m("test/metricsserver"), Imports: []string{m("test/sleepyjob")}, Deps: []string{m("test/sleepyjob")}},
	}
	want := []string{
		"patches depends on internal/podpatch",
		"patches imports github.com/sirupsen/logrus",
		"policy depends on internal/version",
		"patches/submitargs imports github.com/some/lib",
		"webhook depends on sidecar/api",
		"sidecar/api depends on webhook",
		"cmd/sparklet depends on the test harness (test/verify)",
		"cmd/sparklet depends on the test harness (hack/spark)",
		"test/schedulers depends on patches",
		"test/certmanager depends on webhook",
		"test/metricsserver depends on test/sleepyjob",
	}
	problems := check(bad)
	for _, w := range want {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, w) }) {
			t.Errorf("not reported: %s", w)
		}
	}
	if len(problems) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(problems), len(want), strings.Join(problems, "\n"))
	}
	if problems := check(nil); len(problems) == 0 {
		t.Error("rules about packages that do not exist passed")
	}
}

// check returns every broken rule, and every rule whose package is missing.
func check(pkgs []pkg) []string {
	var problems []string
	var found []string
	for _, p := range pkgs {
		rel, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		found = append(found, rel)
		for _, d := range p.Deps {
			if dr, ok := relative(d); ok && matchAny(harness, dr) && !matchAny(harnessUsers, rel) {
				problems = append(problems, fmt.Sprintf("%s depends on the test harness (%s)", rel, dr))
			}
		}
		for _, r := range pure {
			if rel != r.pkg {
				continue
			}
			for _, d := range p.Deps {
				if dr, ok := relative(d); ok && !matchAny(r.project, dr) {
					problems = append(problems, fmt.Sprintf("%s depends on %s; it may depend only on %v of the project", rel, dr, r.project))
				}
			}
			for _, imp := range p.Imports {
				if _, ok := relative(imp); ok || standard(imp) || r.external == nil {
					continue
				}
				if !slices.ContainsFunc(r.external, func(prefix string) bool { return strings.HasPrefix(imp, prefix) }) {
					problems = append(problems, fmt.Sprintf("%s imports %s; outside the project it may import only the standard library and %v", rel, imp, r.external))
				}
			}
		}
		for _, pair := range apart {
			for _, ab := range [][2]string{pair, {pair[1], pair[0]}} {
				if !match(ab[0], rel) {
					continue
				}
				for _, d := range p.Deps {
					if dr, ok := relative(d); ok && match(ab[1], dr) {
						problems = append(problems, fmt.Sprintf("%s depends on %s (%s and %s stay apart)", rel, dr, pair[0], pair[1]))
					}
				}
			}
		}
	}
	var subjects []string
	for _, r := range pure {
		subjects = append(subjects, r.pkg)
	}
	for _, pair := range apart {
		subjects = append(subjects, pair[0], pair[1])
	}
	for _, s := range subjects {
		if !slices.ContainsFunc(found, func(rel string) bool { return match(s, rel) }) {
			problems = append(problems, fmt.Sprintf("no package %s: a layering rule names it", s))
		}
	}
	return problems
}

// relative returns path relative to the module, if it is in the module.
func relative(path string) (string, bool) {
	return strings.CutPrefix(path, module+"/")
}

// match reports whether rel matches pattern: equal, or under it for "x/...".
func match(pattern, rel string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == base || strings.HasPrefix(rel, base+"/")
	}
	return rel == pattern
}

func matchAny(patterns []string, rel string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, rel) })
}

// standard reports whether an import path is the standard library's: its
// first element has no dot, as the go command decides.
func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// listModule runs go list over the module's packages.
func listModule(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Dir,GoFiles,IgnoredGoFiles,TestGoFiles,XTestGoFiles,Imports,Deps", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}
