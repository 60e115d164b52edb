// Command exportcheck lists the exported identifiers of the module's
// internal packages that nothing outside their own package uses, so that a
// package exports its API and nothing else. Run it from the module root:
//
//	go run ./tools/exportcheck
//
// It exits with status 1 when it lists anything; its test runs the same
// check, so `go test ./...` keeps the surface small.
//
// What counts as a use: a reference from any other package of the module,
// its tests included (another package's test is outside). A reference from
// the package's own tests does not count: what only they need belongs in an
// export_test.go. Beyond references by name:
//   - a named type is used when it appears in the type of something used
//     outside (a function's signature, a field's or a variable's type, an
//     exported field of a struct type used outside, a method of an
//     interface used outside), so that nothing exported has an unexported
//     type;
//   - a method is used when its type implements an interface, of any
//     package, that has the method (String, Error, ServeHTTP, pflag.Value,
//     the Unwrap errors.Is calls …): such methods are called through the
//     interface; the methods of an exported interface go with the type;
//   - a constant of a named type is used when another constant of that
//     type is, and a constant declared in a parenthesised const block when
//     another one of that block is (an enumeration is kept whole);
//   - methods of unexported types are not checked: only interfaces reach
//     them from outside.
//
// Struct fields are not checked: encoding/json and yaml read them by
// reflection.
package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

func main() {
	found, err := unused(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "exportcheck:", err)
		os.Exit(2)
	}
	for _, f := range found {
		fmt.Println(f)
	}
	if len(found) > 0 {
		os.Exit(1)
	}
}

// finding is one exported identifier nothing outside its package uses.
type finding struct {
	pos  token.Position
	pkg  string // import path relative to the module
	name string // Name, or Type.Method
}

func (f finding) String() string {
	return fmt.Sprintf("%s:%d: %s.%s: exported, but used only inside its package", f.pos.Filename, f.pos.Line, f.pkg, f.name)
}

// unused loads every package of the module in dir, with its tests, and
// returns the exported identifiers of its internal packages that no other
// package uses, sorted by position.
func unused(dir string) ([]finding, error) {
	pkgs, fset, err := load(dir)
	if err != nil {
		return nil, err
	}
	// key identifies an object across the build variants of its package
	// (a package and the same package compiled for a test are distinct
	// to go/types): its position in the source.
	key := func(o types.Object) string { return fset.Position(o.Pos()).String() }

	c := checker{key: key, used: map[string]bool{}, byMethod: map[string][]*types.Interface{}}
	cands, constBlock := candidates(pkgs, fset, key)
	c.addErrorInterfaces()
	seen := map[*types.Package]bool{}
	for _, p := range pkgs {
		c.collect(p.Types, seen)
	}
	// Uses from outside: every package variant but the candidate's own
	// package and its tests.
	for _, p := range pkgs {
		c.usesIn(p)
	}
	out := c.unusedOf(cands, constBlock, fset)
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].pos, out[j].pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Line < b.Line
	})
	return out, nil
}

// load loads every package of the module in dir, with its tests, and
// fails on any package's errors.
func load(dir string) ([]*packages.Package, *token.FileSet, error) {
	cfg := &packages.Config{
		Mode:  packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax | packages.NeedModule,
		Dir:   dir,
		Tests: true,
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, nil, fmt.Errorf("load: %w", err)
	}
	var errs []error
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			errs = append(errs, e)
		}
	})
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("load: %w", errors.Join(errs...))
	}
	fset := cfg.Fset
	if fset == nil && len(pkgs) > 0 {
		fset = pkgs[0].Fset
	}
	return pkgs, fset, nil
}

// candidate is an exported package-level object or method of an internal
// package, from its plain (non-test) variant.
type candidate struct {
	obj  types.Object
	pkg  string
	name string
}

// candidates returns what the check may list, and maps each constant
// declared in a parenthesised const block to the block's position: the
// block is an enumeration.
func candidates(pkgs []*packages.Package, fset *token.FileSet, key func(types.Object) string) ([]candidate, map[string]string) {
	var cands []candidate
	constBlock := map[string]string{}
	module := ""
	for _, p := range pkgs {
		if p.Module != nil && module == "" {
			module = p.Module.Path
		}
	}
	for _, p := range pkgs {
		if p.ID != p.PkgPath || !isInternal(module, p.PkgPath) || p.Name == "main" {
			continue // test variants, non-internal packages, commands
		}
		rel := strings.TrimPrefix(p.PkgPath, module+"/")
		for _, f := range p.Syntax {
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST || !gd.Lparen.IsValid() {
					continue
				}
				for _, spec := range gd.Specs {
					for _, id := range spec.(*ast.ValueSpec).Names {
						if o := p.TypesInfo.Defs[id]; o != nil {
							constBlock[key(o)] = fset.Position(gd.Pos()).String()
						}
					}
				}
			}
		}
		scope := p.Types.Scope()
		for _, name := range scope.Names() {
			o := scope.Lookup(name)
			if !o.Exported() {
				continue // nor its methods: they are reached through interfaces
			}
			cands = append(cands, candidate{o, rel, name})
			cands = append(cands, methodCandidates(o, rel, name)...)
		}
	}
	return cands, constBlock
}

// methodCandidates returns the exported methods of o, named name in the
// package rel, when o is a defined type other than an interface.
func methodCandidates(o types.Object, rel, name string) []candidate {
	tn, ok := o.(*types.TypeName)
	if !ok || tn.IsAlias() {
		return nil
	}
	named, ok := tn.Type().(*types.Named)
	if !ok {
		return nil
	}
	if _, ok := named.Underlying().(*types.Interface); ok {
		// An interface's methods are what an implementation
		// outside must have: they go with the type.
		return nil
	}
	var cands []candidate
	for m := range named.Methods() {
		if m.Exported() {
			cands = append(cands, candidate{m, rel, name + "." + m.Name()})
		}
	}
	return cands
}

// addErrorInterfaces adds error and the interfaces errors.Is, errors.As
// and errors.Unwrap assert inline.
func (c *checker) addErrorInterfaces() {
	c.addInterface(types.Universe.Lookup("error").Type().Underlying().(*types.Interface))
	errType := types.Universe.Lookup("error").Type()
	anyType := types.Universe.Lookup("any").Type()
	method := func(name string, params, results []types.Type) *types.Func {
		vars := func(ts []types.Type) *types.Tuple {
			vs := make([]*types.Var, len(ts))
			for i, t := range ts {
				vs[i] = types.NewParam(token.NoPos, nil, "", t)
			}
			return types.NewTuple(vs...)
		}
		return types.NewFunc(token.NoPos, nil, name, types.NewSignatureType(nil, nil, nil, vars(params), vars(results), false))
	}
	for _, m := range []*types.Func{
		method("Unwrap", nil, []types.Type{errType}),
		method("Unwrap", nil, []types.Type{types.NewSlice(errType)}),
		method("Is", []types.Type{errType}, []types.Type{types.Typ[types.Bool]}),
		method("As", []types.Type{anyType}, []types.Type{types.Typ[types.Bool]}),
	} {
		c.addInterface(types.NewInterfaceType([]*types.Func{m}, nil).Complete())
	}
}

// collect adds every interface of tp and of the packages it imports,
// transitively; seen holds the packages already visited.
func (c *checker) collect(tp *types.Package, seen map[*types.Package]bool) {
	if tp == nil || seen[tp] {
		return
	}
	seen[tp] = true
	for _, name := range tp.Scope().Names() {
		if tn, ok := tp.Scope().Lookup(name).(*types.TypeName); ok {
			if it, ok := tn.Type().Underlying().(*types.Interface); ok {
				c.addInterface(it)
			}
		}
	}
	for _, imp := range tp.Imports() {
		c.collect(imp, seen)
	}
}

// usesIn records the uses in the package variant p, and the interfaces it
// declares inline (func(x interface{ M() })).
func (c *checker) usesIn(p *packages.Package) {
	home := strings.TrimSuffix(strings.TrimSuffix(p.PkgPath, ".test"), "_test")
	for _, o := range p.TypesInfo.Uses {
		c.use(home, o)
	}
	for _, sel := range p.TypesInfo.Selections {
		c.use(home, sel.Obj())
	}
	for _, f := range p.Syntax {
		ast.Inspect(f, func(n ast.Node) bool {
			if it, ok := n.(*ast.InterfaceType); ok {
				if tv, ok := p.TypesInfo.Types[it]; ok {
					if iface, ok := tv.Type.Underlying().(*types.Interface); ok {
						c.addInterface(iface)
					}
				}
			}
			return true
		})
	}
}

// unusedOf returns the candidates nothing outside uses. A set of constants
// of one type (an enumeration) is used as a whole when any of them is: the
// values belong together.
func (c *checker) unusedOf(cands []candidate, constBlock map[string]string, fset *token.FileSet) []finding {
	enumUsed := map[types.Type]bool{}
	blockUsed := map[string]bool{}
	for _, cd := range cands {
		if k, ok := cd.obj.(*types.Const); ok && c.used[c.key(k)] {
			if _, named := k.Type().(*types.Named); named {
				enumUsed[k.Type()] = true
			}
			if b, ok := constBlock[c.key(k)]; ok {
				blockUsed[b] = true
			}
		}
	}
	var out []finding
	for _, cd := range cands {
		if c.used[c.key(cd.obj)] {
			continue
		}
		if k, ok := cd.obj.(*types.Const); ok && (enumUsed[k.Type()] || blockUsed[constBlock[c.key(k)]]) {
			continue
		}
		if fn, ok := cd.obj.(*types.Func); ok && c.implements(fn) {
			continue
		}
		out = append(out, finding{pos: fset.Position(cd.obj.Pos()), pkg: cd.pkg, name: cd.name})
	}
	return out
}

// checker collects the uses seen from outside each package.
type checker struct {
	key      func(types.Object) string
	used     map[string]bool
	byMethod map[string][]*types.Interface
}

func (c *checker) addInterface(it *types.Interface) {
	for i := range it.NumMethods() {
		name := it.Method(i).Name()
		c.byMethod[name] = append(c.byMethod[name], it)
	}
}

// use records that a package whose path is home refers to o: a use of o,
// unless o is home's own, and of the named types in o's type.
func (c *checker) use(home string, o types.Object) {
	if o == nil || o.Pkg() == nil || o.Pkg().Path() == home {
		return
	}
	c.used[c.key(o)] = true
	c.markTypes(o.Type(), map[types.Type]bool{})
}

// markTypes marks the named types t is built of, down to (not into) named
// types.
func (c *checker) markTypes(t types.Type, seen map[types.Type]bool) {
	if t == nil || seen[t] {
		return
	}
	seen[t] = true
	switch t := t.(type) {
	case *types.Named:
		c.used[c.key(t.Obj())] = true
		for a := range t.TypeArgs().Types() {
			c.markTypes(a, seen)
		}
		// What comes with a type used outside: the exported fields of a
		// struct (read by name or by encoding/json) and the methods of an
		// interface (what an implementation must have).
		switch u := t.Underlying().(type) {
		case *types.Struct:
			for f := range u.Fields() {
				if f.Exported() {
					c.markTypes(f.Type(), seen)
				}
			}
		case *types.Interface:
			for m := range u.Methods() {
				c.markTypes(m.Type(), seen)
			}
		}
	case *types.Alias:
		c.used[c.key(t.Obj())] = true
		c.markTypes(types.Unalias(t), seen)
	case *types.Pointer:
		c.markTypes(t.Elem(), seen)
	case *types.Slice:
		c.markTypes(t.Elem(), seen)
	case *types.Array:
		c.markTypes(t.Elem(), seen)
	case *types.Map:
		c.markTypes(t.Key(), seen)
		c.markTypes(t.Elem(), seen)
	case *types.Chan:
		c.markTypes(t.Elem(), seen)
	case *types.Signature:
		for v := range t.Params().Variables() {
			c.markTypes(v.Type(), seen)
		}
		for v := range t.Results().Variables() {
			c.markTypes(v.Type(), seen)
		}
	case *types.Struct:
		for f := range t.Fields() {
			c.markTypes(f.Type(), seen)
		}
	}
}

// implements reports whether method fn's receiver type, or a pointer to
// it, implements an interface that has fn's name: then fn is called
// through that interface.
func (c *checker) implements(fn *types.Func) bool {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return false
	}
	recv := sig.Recv().Type()
	if p, ok := recv.(*types.Pointer); ok {
		recv = p.Elem()
	}
	if _, ok := recv.Underlying().(*types.Interface); ok {
		return false
	}
	for _, it := range c.byMethod[fn.Name()] {
		if types.Implements(recv, it) || types.Implements(types.NewPointer(recv), it) {
			return true
		}
	}
	return false
}

// isInternal reports whether path is a package whose exports serve only
// the module: one under an internal/ directory, or one of the product's
// own packages (the coordinator, the worker, the store, the wire contract
// and the settings), which other programs are not meant to build on. The
// maths packages are libraries with a public surface of their own, and
// the lab and the commands export nothing anyone imports.
func isInternal(module, path string) bool {
	rel, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return false
	}
	if strings.HasPrefix(rel, "internal/") || strings.Contains(rel, "/internal/") {
		return true
	}
	for _, p := range []string{"config", "coordinator", "proto", "store", "worker"} {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}
