package tasks

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/herald-bridge/herald/conversation/text"
	"github.com/herald-bridge/herald/tasks/source"
)

// argMark stands in for any argument of a userErr format: it prints as
// <argN> whatever the verb, so a format that drops, repeats past the end
// or mistypes an argument shows.
type argMark int

func (a argMark) Format(f fmt.State, _ rune) { fmt.Fprintf(f, "<arg%d>", int(a)) }

// userErrCall is one userErr call of the package: its code, its English
// format and how many arguments it gives.
type userErrCall struct {
	pos  token.Position
	code string
	en   string
	args int
}

// userErrCalls reads every userErr call of the package's sources, and
// reports a UserError built anywhere else (its wording would not be
// checked).
func userErrCalls(t *testing.T) []userErrCall {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var calls []userErrCall
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
						t.Errorf("%s: UserError built outside userErr; its wording is not checked", fset.Position(n.Pos()))
					}
				case *ast.CallExpr:
					if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "userErr" {
						calls = append(calls, readUserErrCall(t, fset.Position(n.Pos()), n))
					}
				}
				return true
			})
		}
	}
	if len(calls) < 30 {
		t.Fatalf("found %d userErr calls; the scan is not reading the manager's files", len(calls))
	}
	return calls
}

var reCode = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func readUserErrCall(t *testing.T, pos token.Position, call *ast.CallExpr) userErrCall {
	t.Helper()
	c := userErrCall{pos: pos}
	if len(call.Args) < 3 {
		t.Errorf("%s: userErr needs a kind, a code and an English text", pos)
		return c
	}
	code, okCode := stringLit(call.Args[1])
	en, okEn := stringLit(call.Args[2])
	if !okCode || !okEn {
		t.Errorf("%s: userErr's code and English text must be string literals", pos)
		return c
	}
	if !reCode.MatchString(code) {
		t.Errorf("%s: code %q is not lower_snake", pos, code)
	}
	c.code, c.en, c.args = code, en, len(call.Args)-3
	return c
}

// fits reports what is wrong with format given n arguments: an argument
// it does not fit or leaves out.
func fits(format string, n int) []string {
	marks := make([]any, n)
	for i := range marks {
		marks[i] = argMark(i)
	}
	out := fmt.Sprintf(format, marks...)
	var bad []string
	if strings.Contains(out, "%!") {
		bad = append(bad, fmt.Sprintf("does not fit its %d arguments: %q", n, out))
	}
	for i := range marks {
		if !strings.Contains(out, fmt.Sprintf("<arg%d>", i)) {
			bad = append(bad, fmt.Sprintf("leaves out argument %d", i+1))
		}
	}
	return bad
}

func isHan(r rune) bool { return unicode.Is(unicode.Han, r) }

// Every error the manager shows people has a code that every language
// words: each userErr call names a code and gives its English as a literal
// that uses every argument (ids, hosts, /approve hints); a code reads the
// same wherever it is made; every catalogue but English words each code
// ("tasks.<code>") with the same arguments, Chinese as a complete
// sentence; and ErrorCodes lists exactly the codes made.
func TestEveryUserErrorIsWordedInEveryLanguage(t *testing.T) {
	calls := userErrCalls(t)
	english := map[string]string{}
	for _, c := range calls {
		if c.code == "" {
			continue
		}
		if prev, ok := english[c.code]; ok && prev != c.en {
			t.Errorf("%s: code %q reads %q here and %q elsewhere", c.pos, c.code, c.en, prev)
		}
		english[c.code] = c.en
		for _, bad := range fits(c.en, c.args) {
			t.Errorf("%s: English text %q %s", c.pos, c.en, bad)
		}
		if strings.ContainsFunc(c.en, isHan) {
			t.Errorf("%s: English text %q has Chinese in it", c.pos, c.en)
		}
		for _, cat := range text.Catalogs() {
			w, ok := cat.Errors["tasks."+c.code]
			if !ok {
				if cat.Lang != text.English.Lang {
					t.Errorf("%s: %s does not word tasks.%s", c.pos, cat.Lang, c.code)
				}
				continue
			}
			for _, bad := range fits(w, c.args) {
				t.Errorf("%s: %s wording of tasks.%s %q %s", c.pos, cat.Lang, c.code, w, bad)
			}
		}
		zh := text.Chinese.Errors["tasks."+c.code]
		if !strings.ContainsFunc(zh, isHan) {
			t.Errorf("%s: Chinese text %q has no Chinese in it", c.pos, zh)
		}
		if !strings.HasSuffix(zh, "。") {
			t.Errorf("%s: Chinese text %q does not end with 。", c.pos, zh)
		}
	}
	made := make([]string, 0, len(english))
	for code := range english {
		made = append(made, code)
	}
	slices.Sort(made)
	listed := ErrorCodes()
	slices.Sort(listed)
	if !slices.Equal(made, listed) {
		t.Errorf("ErrorCodes lists\n%v\nthe manager makes\n%v", listed, made)
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
	zh, _ := text.Error("zh", err)
	if want := "任务 " + tk.ID + " 当前为“已暂停”，不在运行中。"; zh != want {
		t.Errorf("Chinese %q, want %q", zh, want)
	}
}

// A list of the kinds reads as each language joins alternatives.
func TestUserErrorListsTheKindsInEachLanguage(t *testing.T) {
	r := newRig(t)
	_, err := r.m.Submit(context.Background(), Submission{Principal: "console:admin", URL: "https://example.edu/feed", Kind: "nosuch"})
	var ue *UserError
	if !errors.As(err, &ue) || ue.Code != "unknown_kind" {
		t.Fatalf("got %v, want the unknown kind refusal", err)
	}
	if want := `unknown kind "nosuch": use ` + source.List("", "", ", ", " or "); ue.Msg != want {
		t.Errorf("English %q, want %q", ue.Msg, want)
	}
	zh, _ := text.Error("zh", err)
	if want := `未知的类型 "nosuch"；请用 ` + source.List("", "", "、", " 或 ") + "。"; zh != want {
		t.Errorf("Chinese %q, want %q", zh, want)
	}
}
