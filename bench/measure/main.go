// Command measure prints the size of the code: the non-test Go lines of each
// package (as wc -l counts them, comments and blank lines included), their
// total, and the longest functions with their receivers. A change that
// restructures code (a move, a split) gives these figures before and after:
//
//	go run ./bench/measure            # the repository this is run in
//	go run ./bench/measure -top 30 DIR
//
// Directories named testdata or node_modules, and those whose name starts
// with "." or "_" (which the go tool ignores too), are skipped.
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "measure:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fset := flag.NewFlagSet("measure", flag.ContinueOnError)
	top := fset.Int("top", 20, "how many of the longest functions to list")
	fset.Usage = func() {
		fmt.Fprintln(fset.Output(), "Usage: go run ./bench/measure [-top N] [DIR]   (DIR: the module root above the current directory)")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		return err
	}
	if fset.NArg() > 1 {
		return fmt.Errorf("one directory at most, got %d arguments", fset.NArg())
	}
	root := fset.Arg(0)
	if root == "" {
		var err error
		if root, err = moduleRoot(); err != nil {
			return err
		}
	}
	m, err := measure(root)
	if err != nil {
		return err
	}
	m.print(out, *top)
	return nil
}

// moduleRoot is the nearest directory at or above the current one that
// holds a go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod in the current directory or above it: give the directory to measure")
		}
		dir = parent
	}
}

type function struct {
	pkg  string // directory, relative to the root
	name string // receiver.name, or name
	pos  string // file:line, relative to the root
	n    int    // lines, from func to the closing brace
}

type measures struct {
	lines map[string]int // by package directory
	funcs []function
}

func measure(root string) (*measures, error) {
	m := &measures{lines: map[string]int{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || !d.Type().IsRegular() {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		m.lines[filepath.Dir(rel)] += strings.Count(string(src), "\n")
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start := fset.Position(fd.Pos()).Line
			m.funcs = append(m.funcs, function{
				pkg:  filepath.Dir(rel),
				name: funcName(fd),
				pos:  fmt.Sprintf("%s:%d", rel, start),
				n:    fset.Position(fd.End()).Line - start + 1,
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// funcName is receiver.name for a method (the receiver's type without its
// pointer or type parameters), name for a function.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	switch g := t.(type) {
	case *ast.IndexExpr:
		t = g.X
	case *ast.IndexListExpr:
		t = g.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func (m *measures) print(out io.Writer, top int) {
	pkgs := make([]string, 0, len(m.lines))
	total := 0
	for p, n := range m.lines {
		pkgs = append(pkgs, p)
		total += n
	}
	slices.SortFunc(pkgs, func(a, b string) int {
		return cmp.Or(cmp.Compare(m.lines[b], m.lines[a]), cmp.Compare(a, b))
	})
	fmt.Fprintln(out, "non-test Go lines per package:")
	for _, p := range pkgs {
		fmt.Fprintf(out, "%7d  %s\n", m.lines[p], p)
	}
	fmt.Fprintf(out, "%7d  total, %d packages\n", total, len(pkgs))

	slices.SortFunc(m.funcs, func(a, b function) int {
		return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.pos, b.pos))
	})
	top = min(max(top, 0), len(m.funcs))
	fmt.Fprintf(out, "\nthe %d longest functions (lines):\n", top)
	for _, f := range m.funcs[:top] {
		fmt.Fprintf(out, "%7d  %s %s  (%s)\n", f.n, f.pkg, f.name, f.pos)
	}
}
