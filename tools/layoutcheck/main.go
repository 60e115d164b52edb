// Command layoutcheck keeps the module walkable: it lists the Go files
// over 1000 lines, the functions over 120 lines, and the packages of the
// product that import the lab. Run it from the module root:
//
//	go run ./tools/layoutcheck
//
// It exits with status 1 when it lists anything; its test runs the same
// check, so `go test ./...` keeps the layout.
//
// Test files and generated files (those with the standard "Code generated
// … DO NOT EDIT." line) are not checked: a table-driven test or a protoc
// output is long for good reasons. A function's span runs from its func
// keyword to its closing brace; function literals count on their own as
// well as inside the function that holds them.
//
// The lab (benchmarks, workloads, the fault harness) imports the product
// and is never imported by it; only the commands under cmd/ may import
// it, as the binary ships the bench subcommands.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const (
	maxFileLines = 1000
	maxFuncLines = 120
	labDir       = "lab"
)

func main() {
	found, err := check(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "layoutcheck:", err)
		os.Exit(2)
	}
	for _, f := range found {
		fmt.Println(f)
	}
	if len(found) > 0 {
		os.Exit(1)
	}
}

// finding is one breach of the layout rules.
type finding struct {
	pos token.Position
	msg string
}

func (f finding) String() string {
	return fmt.Sprintf("%s:%d: %s", f.pos.Filename, f.pos.Line, f.msg)
}

// check walks the module rooted at dir (the directory of its go.mod) and
// returns its breaches of the layout rules, sorted by position. Like the go
// command, it skips testdata, vendor, directories whose names start with
// "." or "_", and nested modules.
func check(dir string) ([]finding, error) {
	module, err := modulePath(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []finding
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && skipDir(p, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return fmt.Errorf("relative path of %s: %w", p, err)
		}
		found, err := checkFile(fset, p, filepath.ToSlash(rel), module)
		if err != nil {
			return err
		}
		out = append(out, found...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", dir, err)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].pos, out[j].pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Line < b.Line
	})
	return out, nil
}

// skipDir reports whether the go command would leave the directory at p
// out of the module's packages.
func skipDir(p, name string) bool {
	if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return true
	}
	_, err := os.Stat(filepath.Join(p, "go.mod"))
	return err == nil
}

// checkFile parses the non-test Go file at p, whose slash-separated path
// relative to the module root is rel, and returns its breaches.
func checkFile(fset *token.FileSet, p, rel, module string) ([]finding, error) {
	f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if ast.IsGenerated(f) {
		return nil, nil
	}
	var out []finding
	if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
		out = append(out, finding{fset.Position(f.Pos()), fmt.Sprintf("file has %d lines, over %d", n, maxFileLines)})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		var name string
		switch fn := n.(type) {
		case *ast.FuncDecl:
			if fn.Body == nil {
				return true
			}
			name = "func " + funcName(fn)
		case *ast.FuncLit:
			name = "function literal"
		default:
			return true
		}
		start, end := fset.Position(n.Pos()), fset.Position(n.End())
		if span := end.Line - start.Line + 1; span > maxFuncLines {
			out = append(out, finding{start, fmt.Sprintf("%s spans %d lines, over %d", name, span, maxFuncLines)})
		}
		return true
	})
	if mayImportLab(path.Dir(rel)) {
		return out, nil
	}
	lab := module + "/" + labDir
	for _, imp := range f.Imports {
		ip, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: import path %s: %w", fset.Position(imp.Pos()), imp.Path.Value, err)
		}
		if ip == lab || strings.HasPrefix(ip, lab+"/") {
			out = append(out, finding{fset.Position(imp.Pos()), fmt.Sprintf("imports %s: only the lab and the commands may", ip)})
		}
	}
	return out, nil
}

// mayImportLab reports whether the package in the module-relative
// directory dir may import the lab: the lab itself and the commands.
func mayImportLab(dir string) bool {
	for _, top := range []string{labDir, "cmd"} {
		if dir == top || strings.HasPrefix(dir, top+"/") {
			return true
		}
	}
	return false
}

// funcName is fn's name, with its receiver's type for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// modulePath reads the module path from the go.mod file at p.
func modulePath(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("module path: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, "module")
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		rest = strings.TrimSpace(rest)
		if i := strings.Index(rest, "//"); i >= 0 {
			rest = strings.TrimSpace(rest[:i])
		}
		if uq, err := strconv.Unquote(rest); err == nil {
			rest = uq
		}
		return rest, nil
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("module path: read %s: %w", p, err)
	}
	return "", errors.New("module path: no module line in " + p)
}
