package configs

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/herald-bridge/herald/tasks/source"
	"github.com/herald-bridge/herald/tasks/watch"
)

// decoder turns a YAML AST into typed values, strictly: unknown keys,
// duplicate keys and wrong types are problems with their line. It keeps
// every value's line by dotted path ("recipients.ops.webhook.url") for the
// validation that follows, expands ${NAME} in strings, and records which
// paths named a variable that is not set.
type decoder struct {
	file    string
	ps      *problems
	lookup  func(string) (string, bool)
	lines   map[string]int
	unset   map[string][]string // path -> unset variable names
	fromVar map[string]bool     // path's value came (partly) from a variable
	bad     map[string]bool     // path's value was rejected while decoding
	values  []string            // values substituted for variables: scrubbed from messages
	anchors map[string]ast.Node
	depth   int
}

func newDecoder(file string, ps *problems, lookup func(string) (string, bool)) *decoder {
	return &decoder{
		file:    file,
		ps:      ps,
		lookup:  lookup,
		lines:   map[string]int{},
		unset:   map[string][]string{},
		fromVar: map[string]bool{},
		bad:     map[string]bool{},
		anchors: map[string]ast.Node{},
	}
}

// parseYAML parses src, reporting syntax errors as problems. Duplicate
// keys are allowed by the parser and reported by the decoder, which knows
// the one place they are legal.
//
// A sensitive file (the secrets file) gets no parser message, which may
// quote its text.
func parseYAML(file string, src []byte, ps *problems, sensitive bool) (body ast.Node) {
	defer func() {
		// A parser failure on hostile input must not take the service down.
		if r := recover(); r != nil {
			ps.add(file, 0, "yaml: the file cannot be parsed")
			body = nil
		}
	}()
	f, err := parser.ParseBytes(src, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		line, msg := 0, err.Error()
		var se yaml.Error
		if errors.As(err, &se) {
			if tk := se.GetToken(); tk != nil && tk.Position != nil {
				line = tk.Position.Line
			}
			msg = se.GetMessage()
		}
		if sensitive {
			msg = "syntax error"
		}
		ps.add(file, line, "yaml: %s", msg)
		return nil
	}
	n := 0
	for _, doc := range f.Docs {
		if doc == nil || doc.Body == nil || isNull(doc.Body) {
			continue
		}
		n++
		if n == 1 {
			body = doc.Body
			continue
		}
		ps.add(file, lineOf(doc.Body), "only one YAML document is allowed")
	}
	return body
}

func lineOf(n ast.Node) int {
	if n == nil {
		return 0
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line
	}
	return 0
}

func isNull(n ast.Node) bool {
	switch n.(type) {
	case nil, *ast.NullNode, *ast.CommentGroupNode, *ast.CommentNode:
		return true
	}
	return false
}

// resolve strips anchors, tags and comments and follows aliases.
func (d *decoder) resolve(n ast.Node) ast.Node {
	for i := 0; i < 16; i++ {
		switch v := n.(type) {
		case *ast.AnchorNode:
			if v.Name != nil {
				d.anchors[v.Name.GetToken().Value] = v.Value
			}
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.AliasNode:
			name := ""
			if v.Value != nil {
				name = v.Value.GetToken().Value
			}
			target, ok := d.anchors[name]
			if !ok {
				d.ps.add(d.file, lineOf(v), "unknown alias %q", name)
				return nil
			}
			n = target
		case *ast.DocumentNode:
			n = v.Body
		default:
			return n
		}
	}
	return n
}

func kindOf(n ast.Node) string {
	switch n.(type) {
	case *ast.MappingNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	}
	return "a value of another kind"
}

// scalarText returns the text of a scalar node.
func scalarText(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		if v.Value != nil {
			return v.Value.Value, true
		}
		return "", true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return n.GetToken().Value, true
	}
	return "", false
}

var (
	durationType = reflect.TypeOf(Duration(0))
	specType     = reflect.TypeOf(watch.Spec{})
)

// where names a path for messages.
func where(path string) string {
	if path == "" {
		return "the top level"
	}
	return path
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// decode stores node n into v. line is the line of the key naming n.
func (d *decoder) decode(n ast.Node, v reflect.Value, path string, line int) {
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > 32 {
		d.fail(path, line, "%s: nested too deeply", where(path))
		return
	}
	n = d.resolve(n)
	if l := lineOf(n); l > 0 && line == 0 {
		line = l
	}
	if _, ok := d.lines[path]; !ok || path == "" {
		d.lines[path] = line
	}
	if isNull(n) {
		return
	}
	t := v.Type()
	switch {
	case t == durationType:
		s, ok := scalarText(n)
		if !ok {
			d.fail(path, line, "%s: want a duration such as 30m or 72h, not %s", path, kindOf(n))
			return
		}
		s = d.expand(path, line, s)
		dur, err := parseDuration(strings.TrimSpace(s))
		if err != nil {
			d.fail(path, line, "%s: invalid duration %s: want a number and unit such as 30m, 72h or 3d", path, d.quote(path, s))
			return
		}
		v.SetInt(int64(dur))
		return
	}
	switch t.Kind() {
	case reflect.String:
		s, ok := scalarText(n)
		if !ok {
			d.fail(path, line, "%s: want a string, not %s", path, kindOf(n))
			return
		}
		v.SetString(d.expand(path, line, s))
	case reflect.Bool:
		b, ok := n.(*ast.BoolNode)
		if !ok {
			d.fail(path, line, "%s: want true or false, not %s", path, kindOf(n))
			return
		}
		v.SetBool(b.Value)
	case reflect.Int:
		in, ok := n.(*ast.IntegerNode)
		if !ok {
			d.fail(path, line, "%s: want a whole number, not %s", path, kindOf(n))
			return
		}
		i, err := strconv.ParseInt(in.GetToken().Value, 0, 32)
		if err != nil {
			switch x := in.Value.(type) {
			case int64:
				i, err = x, nil
			case uint64:
				i, err = int64(x), nil
			}
		}
		if err != nil || i < -1<<31 || i > 1<<31-1 {
			d.fail(path, line, "%s: number out of range", path)
			return
		}
		v.SetInt(i)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.decode(n, v.Elem(), path, line)
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			d.fail(path, line, "%s: want a list, not %s", path, kindOf(n))
			return
		}
		out := reflect.MakeSlice(t, len(seq.Values), len(seq.Values))
		for i, e := range seq.Values {
			d.decode(e, out.Index(i), fmt.Sprintf("%s[%d]", path, i), lineOf(e))
		}
		v.Set(out)
	case reflect.Map:
		m, ok := n.(*ast.MappingNode)
		if !ok {
			d.fail(path, line, "%s: want a mapping, not %s", path, kindOf(n))
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(t))
		}
		first := map[string]int{}
		for _, mv := range m.Values {
			key, kline, ok := d.key(mv, path)
			if !ok {
				continue
			}
			if at, dup := first[key]; dup {
				d.ps.add(d.file, kline, "duplicate key %q in %s (first at line %d)", key, where(path), at)
				continue
			}
			first[key] = kline
			ev := reflect.New(t.Elem()).Elem()
			d.decode(mv.Value, ev, join(path, key), kline)
			v.SetMapIndex(reflect.ValueOf(key), ev)
		}
	case reflect.Struct:
		d.decodeStruct(n, v, path, line)
	default:
		d.fail(path, line, "%s: unsupported field type", path)
	}
}

// fail reports a problem with the value at path.
func (d *decoder) fail(path string, line int, format string, args ...any) {
	d.bad[path] = true
	d.ps.add(d.file, line, format, args...)
}

// parseDuration is time.ParseDuration that also takes whole days first
// ("3d", "1d12h"), as chat commands do.
func parseDuration(s string) (time.Duration, error) {
	days, rest, ok := strings.Cut(s, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	n, err := strconv.Atoi(days)
	if err != nil || n < 0 || n > 3660 || days[0] == '+' {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	d := time.Duration(n) * 24 * time.Hour
	if rest == "" {
		return d, nil
	}
	r, err := time.ParseDuration(rest)
	if err != nil || r < 0 {
		return 0, fmt.Errorf("invalid duration %q", s)
	}
	return d + r, nil
}

// key returns a mapping entry's key text and line.
func (d *decoder) key(mv *ast.MappingValueNode, path string) (string, int, bool) {
	kn := ast.Node(mv.Key)
	if mk, ok := kn.(*ast.MappingKeyNode); ok {
		kn = mk.Value
	}
	line := lineOf(kn)
	if _, ok := kn.(*ast.MergeKeyNode); ok {
		d.ps.add(d.file, line, "merge keys (<<) are not supported in %s", where(path))
		return "", line, false
	}
	kn = d.resolve(kn)
	s, ok := scalarText(kn)
	if !ok {
		d.ps.add(d.file, line, "keys in %s must be strings", where(path))
		return "", line, false
	}
	return s, line, true
}

// fieldName is a struct field's key: its yaml tag, else its json tag.
func fieldName(f reflect.StructField) string {
	tag := f.Tag.Get("yaml")
	if tag == "" {
		tag = f.Tag.Get("json")
	}
	name, _, _ := strings.Cut(tag, ",")
	return name
}

// structFields maps t's keys to their fields' indexes. The keys of an
// embedded struct tagged `yaml:",inline"` (section.Route) are t's own.
func structFields(t reflect.Type) map[string][]int {
	fields := map[string][]int{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct && strings.HasSuffix(f.Tag.Get("yaml"), ",inline") {
			for name, idx := range structFields(f.Type) {
				fields[name] = append([]int{i}, idx...)
			}
			continue
		}
		if name := fieldName(f); name != "" && name != "-" {
			fields[name] = []int{i}
		}
	}
	return fields
}

func (d *decoder) decodeStruct(n ast.Node, v reflect.Value, path string, line int) {
	m, ok := n.(*ast.MappingNode)
	if !ok {
		d.ps.add(d.file, line, "%s: want a mapping, not %s", where(path), kindOf(n))
		return
	}
	t := v.Type()
	fields := structFields(t)
	first := map[string]int{}
	var itemURL ast.Node // a json source's second "url": the item URL path
	itemURLLine := 0
	for _, mv := range m.Values {
		key, kline, ok := d.key(mv, path)
		if !ok {
			continue
		}
		i, known := fields[key]
		if !known {
			d.ps.add(d.file, kline, "unknown key %q in %s%s", key, where(path), didYouMean(key, slices.Collect(maps.Keys(fields))))
			continue
		}
		if at, dup := first[key]; dup {
			if t == specType && key == "url" && itemURL == nil {
				itemURL, itemURLLine = mv.Value, kline
				continue
			}
			d.ps.add(d.file, kline, "duplicate key %q in %s (first at line %d)", key, where(path), at)
			continue
		}
		first[key] = kline
		d.decode(mv.Value, v.FieldByIndex(i), join(path, key), kline)
	}
	if itemURL != nil {
		spec := v.Addr().Interface().(*watch.Spec)
		switch {
		case spec.Kind != source.KindJSON:
			d.ps.add(d.file, itemURLLine, "duplicate key \"url\" in %s (first at line %d); a second url (the item URL field) is only allowed for kind json", where(path), first["url"])
		case first["link"] != 0:
			d.ps.add(d.file, itemURLLine, "%s: the item URL field is given twice (link and a second url)", where(path))
		default:
			var s string
			d.decode(itemURL, reflect.ValueOf(&s).Elem(), join(path, "link"), itemURLLine)
			spec.Link = s
		}
	}
}

// quote renders a value for a message, unless it came from a variable
// (which may hold a secret).
func (d *decoder) quote(path, s string) string {
	if d.fromVar[path] {
		return "(value from a variable)"
	}
	return strconv.Quote(s)
}

// expand replaces ${NAME} references in s. Unset names are recorded for
// the path (validation decides whether the path is in use); a malformed
// reference is a problem.
func (d *decoder) expand(path string, line int, s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		rest = rest[i+2:]
		j := strings.IndexByte(rest, '}')
		if j < 0 || !validVarName(rest[:j]) {
			d.ps.add(d.file, line, "%s: malformed variable reference (want ${NAME} with letters, digits and _)", path)
			return ""
		}
		name := rest[:j]
		rest = rest[j+1:]
		d.fromVar[path] = true
		val, ok := d.lookup(name)
		if !ok {
			d.unset[path] = append(d.unset[path], name)
			continue
		}
		if val != "" {
			d.values = append(d.values, val)
		}
		b.WriteString(val)
	}
	return b.String()
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
