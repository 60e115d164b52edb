package schedule

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// The scheduler decides which pages to fetch and never fetches or reads
// one: HTTP and HTML belong to the workers. Keeping them out of its
// dependencies keeps the planner small to build, test and embed, and
// catches a definition type that starts to carry parsing code (as
// source.Source once did with its compiled CSS selectors).
func TestNoHTTPOrHTMLDeps(t *testing.T) {
	forbidden := []string{
		"github.com/PuerkitoBio/goquery",
		"github.com/andybalholm/cascadia",
		"golang.org/x/net/html",
		"net/http",
	}
	banned := func(path string) bool {
		return slices.ContainsFunc(forbidden, func(f string) bool {
			return path == f || strings.HasPrefix(path, f+"/")
		})
	}
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps}
	pkgs, err := packages.Load(cfg, ".")
	if err != nil {
		t.Fatalf("load the package: %v", err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("load the package: errors above")
	}
	// Walk the import graph breadth first, remembering who imported each
	// package, so a failure shows the chain that brought it in.
	from := map[string]string{}
	queue := slices.Clone(pkgs)
	for _, p := range pkgs {
		from[p.PkgPath] = ""
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if banned(p.PkgPath) {
			chain := []string{p.PkgPath}
			for q := from[p.PkgPath]; q != ""; q = from[q] {
				chain = append(chain, q)
			}
			slices.Reverse(chain)
			t.Errorf("depends on %s: %s", p.PkgPath, strings.Join(chain, " → "))
			continue
		}
		for _, imp := range p.Imports {
			if _, seen := from[imp.PkgPath]; !seen {
				from[imp.PkgPath] = p.PkgPath
				queue = append(queue, imp)
			}
		}
	}
}
