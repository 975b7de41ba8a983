// Package snippets holds the README's and docs/' Go snippets to the code
// they show: each snippet is marked with the Example or test it is taken
// from, and fails this test when it no longer is an excerpt of it.
package snippets

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// marker precedes every ```go block: <!-- snippet: file.go FuncName -->,
// the file relative to the repository's root.
var marker = regexp.MustCompile(`^<!-- snippet: (\S+) (\S+) -->$`)

// TestSnippetsAreExcerpts: every Go snippet of README.md and docs/*.md is
// marked with the function it is taken from, and its lines (comments and
// blank lines aside; a line "..." skips any number) appear in that
// function in order, its import lines among the file's imports. So a
// snippet compiles and stays current because its source does.
func TestSnippetsAreExcerpts(t *testing.T) {
	root := filepath.Join("..", "..")
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, doc := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(text), "\n")
		for i, l := range lines {
			if l != "```go" {
				continue
			}
			n++
			where := fmt.Sprintf("%s:%d", filepath.Base(doc), i+1)
			if i == 0 || !marker.MatchString(lines[i-1]) {
				t.Errorf("%s: a Go snippet without a <!-- snippet: file.go Func --> line before it", where)
				continue
			}
			m := marker.FindStringSubmatch(lines[i-1])
			end := i + 1
			for end < len(lines) && lines[end] != "```" {
				end++
			}
			if err := excerpt(filepath.Join(root, m[1]), m[2], lines[i+1:end]); err != nil {
				t.Errorf("%s: not an excerpt of %s in %s: %v", where, m[2], m[1], err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no Go snippets found: is the README where this test looks?")
	}
}

// excerpt checks that snippet's lines appear in order in function fn of
// file (its imports among the file's).
func excerpt(file, fn string, snippet []string) error {
	src, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		return err
	}
	var body []string
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == fn {
			body = code(strings.Split(string(src[fset.Position(fd.Body.Lbrace).Offset:fset.Position(fd.Body.Rbrace).Offset]), "\n"))
		}
	}
	if body == nil {
		return fmt.Errorf("no function %s", fn)
	}
	imports := map[string]bool{}
	for _, im := range f.Imports {
		imports[im.Path.Value] = true
	}
	inImport := false
	at := 0
	for _, l := range code(snippet) {
		switch {
		case l == "import (":
			inImport = true
			continue
		case inImport && l == ")":
			inImport = false
			continue
		case inImport:
			if path := l[strings.IndexByte(l, '"'):]; !imports[path] {
				return fmt.Errorf("the file does not import %s", path)
			}
			continue
		case l == "...":
			continue
		}
		found := false
		for ; at < len(body); at++ {
			if body[at] == l {
				found, at = true, at+1
				break
			}
		}
		if !found {
			return fmt.Errorf("line %q is not there (after the lines before it)", l)
		}
	}
	return nil
}

// code returns lines without indentation, comments and blank lines. A
// comment starts at "//" at the start of a line or after a space, so that
// URLs in strings ("redis://…") stay.
func code(lines []string) []string {
	var out []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "//") {
			continue
		}
		if i := strings.Index(l, " //"); i >= 0 {
			l = strings.TrimSpace(l[:i])
		}
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
