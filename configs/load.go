package configs

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"github.com/goccy/go-yaml/ast"
)

// Load reads, expands, defaults and validates the configuration at path,
// looking ${NAME} up in the secrets file and then the environment. A
// configuration with problems yields an *Error listing all of them.
func Load(path string) (*Config, error) {
	return LoadEnv(path, os.LookupEnv)
}

// LoadEnv is Load with the environment lookup injected.
func LoadEnv(path string, lookupEnv func(string) (string, bool)) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return parse(path, src, lookupEnv)
}

// parse loads a configuration from src, naming it file in messages.
func parse(file string, src []byte, lookupEnv func(string) (string, bool)) (*Config, error) {
	ps := &problems{main: file}
	body := parseYAML(file, src, ps, false)
	if err := ps.err(); err != nil {
		return nil, err
	}

	secrets, warnings := loadSecrets(file, body, ps)
	lookup := func(name string) (string, bool) {
		if v, ok := secrets[name]; ok {
			return v, true
		}
		if lookupEnv == nil {
			return "", false
		}
		return lookupEnv(name)
	}

	cfg := &Config{Path: file}
	d := newDecoder(file, ps, lookup)
	if body != nil {
		d.decode(body, reflect.ValueOf(cfg).Elem(), "", lineOf(body))
	}
	cfg.applyDefaults()
	cfg.Warnings = append(cfg.Warnings, warnings...)
	v := &validator{cfg: cfg, d: d, ps: ps}
	v.validate()
	ps.scrub(d.values)
	if err := ps.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// loadSecrets reads the secrets_file named at the top level of body, if
// any: a YAML map NAME: value. Its problems carry its own file name; a
// file others may read yields a warning.
func loadSecrets(file string, body ast.Node, ps *problems) (map[string]string, []string) {
	top, ok := body.(*ast.MappingNode)
	if !ok {
		return nil, nil
	}
	var name string
	line := 0
	for _, mv := range top.Values {
		if k, ok := scalarText(mv.Key); ok && k == "secrets_file" {
			name, _ = scalarText(mv.Value)
			line = lineOf(mv.Key)
		}
	}
	if name == "" {
		return nil, nil
	}
	if !filepath.IsAbs(name) {
		name = filepath.Join(filepath.Dir(file), name)
	}
	src, err := os.ReadFile(name)
	if err != nil {
		ps.add(file, line, "secrets_file: cannot read %s: %v", filepath.Base(name), unwrapPathError(err))
		return nil, nil
	}
	var warnings []string
	if fi, err := os.Stat(name); err == nil && fi.Mode().Perm()&0o077 != 0 {
		warnings = append(warnings, fmt.Sprintf("secrets_file %s is readable by others; chmod 600 it", filepath.Base(name)))
	}
	sb := parseYAML(name, src, ps, true)
	if sb == nil {
		return nil, warnings
	}
	m, ok := sb.(*ast.MappingNode)
	if !ok {
		ps.add(name, lineOf(sb), "want a mapping of NAME: value, not %s", kindOf(sb))
		return nil, warnings
	}
	out := map[string]string{}
	first := map[string]int{}
	for _, mv := range m.Values {
		k, ok := scalarText(mv.Key)
		kline := lineOf(mv.Key)
		if !ok || !validVarName(k) {
			ps.add(name, kline, "secret names must be letters, digits and _")
			continue
		}
		if at, dup := first[k]; dup {
			ps.add(name, kline, "duplicate key %q (first at line %d)", k, at)
			continue
		}
		first[k] = kline
		if isNull(mv.Value) {
			out[k] = ""
			continue
		}
		val, ok := scalarText(mv.Value)
		if !ok {
			ps.add(name, kline, "%s: want a string, not %s", k, kindOf(mv.Value))
			continue
		}
		out[k] = val
	}
	return out, warnings
}

// unwrapPathError drops the path from an *os.PathError (the message names
// the file already).
func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
