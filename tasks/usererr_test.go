package tasks

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// argMark stands in for any argument of a userErr format: it prints as
// <argN> whatever the verb, so a format that drops, repeats past the end
// or mistypes an argument shows.
type argMark int

func (a argMark) Format(f fmt.State, _ rune) { fmt.Fprintf(f, "<arg%d>", int(a)) }

// Every error the manager shows people is written in both chat languages
// where it is made: each userErr call in the package gives an English and a
// Chinese format as literals, the Chinese one is Chinese and a complete
// sentence, and both use every argument (ids, hosts, /approve hints).
func TestEveryUserErrorHasEnglishAndChinese(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	calls := 0
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.CompositeLit:
					if id, ok := n.Type.(*ast.Ident); ok && id.Name == "UserError" && fn.Name.Name != "userErr" {
						t.Errorf("%s: UserError built outside userErr; its Chinese text is not checked", fset.Position(n.Pos()))
					}
				case *ast.CallExpr:
					if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "userErr" {
						calls++
						checkUserErrCall(t, fset.Position(n.Pos()), n)
					}
				}
				return true
			})
		}
	}
	if calls < 30 {
		t.Fatalf("found %d userErr calls; the scan is not reading the manager's files", calls)
	}
}

func checkUserErrCall(t *testing.T, pos token.Position, call *ast.CallExpr) {
	t.Helper()
	if len(call.Args) < 3 {
		t.Errorf("%s: userErr needs a kind, an English and a Chinese text", pos)
		return
	}
	en, okEn := stringLit(call.Args[1])
	zh, okZh := stringLit(call.Args[2])
	if !okEn || !okZh {
		t.Errorf("%s: userErr's texts must be string literals", pos)
		return
	}
	marks := make([]any, len(call.Args)-3)
	for i := range marks {
		marks[i] = argMark(i)
	}
	for _, f := range []struct{ lang, format string }{{"English", en}, {"Chinese", zh}} {
		out := fmt.Sprintf(f.format, marks...)
		if strings.Contains(out, "%!") {
			t.Errorf("%s: %s text %q does not fit its %d arguments: %q", pos, f.lang, f.format, len(marks), out)
		}
		for i := range marks {
			if !strings.Contains(out, fmt.Sprintf("<arg%d>", i)) {
				t.Errorf("%s: %s text %q leaves out argument %d", pos, f.lang, f.format, i+1)
			}
		}
	}
	if !strings.ContainsFunc(zh, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
		t.Errorf("%s: Chinese text %q has no Chinese in it", pos, zh)
	}
	if !strings.HasSuffix(zh, "。") {
		t.Errorf("%s: Chinese text %q does not end with 。", pos, zh)
	}
	if strings.ContainsFunc(en, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
		t.Errorf("%s: English text %q has Chinese in it", pos, en)
	}
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// A state in an error reads in the error's language.
func TestUserErrorNamesTheStateInEachLanguage(t *testing.T) {
	r := newRig(t)
	tk := r.activeTask()
	ctx := context.Background()
	if _, err := r.m.Pause(ctx, "", tk.ID); err != nil {
		t.Fatal(err)
	}
	_, err := r.m.Pause(ctx, "", tk.ID)
	var ue *UserError
	if !errors.As(err, &ue) || !errors.Is(err, ErrState) {
		t.Fatalf("second pause: %v, want a UserError of ErrState", err)
	}
	if want := "task " + tk.ID + " is paused, not active"; ue.Msg != want {
		t.Errorf("English %q, want %q", ue.Msg, want)
	}
	if want := "任务 " + tk.ID + " 当前为“已暂停”，不在运行中。"; ue.Zh != want {
		t.Errorf("Chinese %q, want %q", ue.Zh, want)
	}
}
