package config

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-egress/sluice/rules"
)

// FieldError is one problem in a config: where it is and what is wrong.
type FieldError struct {
	// File is the config's name ("" for a config built in code).
	File string
	// Line is the 1-based line of the key in File; 0 when unknown.
	Line int
	// Key is the key path, as in "tenants.acme.classes.agent.allow[2].host"; "" for the
	// document as a whole.
	Key string
	// Msg says what is wrong and, where it can, what to write instead.
	Msg string
}

// Error formats the problem as "file:line: key: msg", leaving out what is unknown.
func (e *FieldError) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Parse decodes a config strictly: an unknown key, a duplicate key (a tenant defined
// twice, say), a value of the wrong type or several YAML documents are errors naming
// name, line and key. It fills in defaults for absent keys but does not validate values:
// Load calls Validate. name becomes Config.Path.
func Parse(data []byte, name string) (*Config, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(&doc)
	if err == io.EOF {
		c := &Config{Path: name}
		c.applyDefaults()
		return c, nil
	}
	if err != nil {
		return nil, yamlError(name, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		if err != nil {
			return nil, yamlError(name, err)
		}
		return nil, &FieldError{File: name, Line: extra.Line, Msg: "several YAML documents; want one"}
	}

	w := walker{file: name, lines: map[string]int{}, seen: map[*yaml.Node]bool{}}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	w.walk(root, reflect.TypeFor[Config](), "", 0)
	if len(w.errs) > 0 {
		return nil, errors.Join(w.errs...)
	}

	c := &Config{Path: name, lines: w.lines}
	// The walk has checked every key and type; decoding again with KnownFields is the
	// library's own check behind ours.
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(c); err != nil {
		return nil, yamlError(name, err)
	}
	c.setEntryLines()
	c.applyDefaults()
	return c, nil
}

// setEntryLines records each entry's line from the walk and upper-cases methods.
func (c *Config) setEntryLines() {
	for tn, t := range c.Tenants {
		if t == nil {
			continue
		}
		for cn, cl := range t.Classes {
			if cl == nil {
				continue
			}
			for i := range cl.Allow {
				cl.Allow[i].Line = c.lines[entryKey(tn, cn, "allow", i)]
				rules.UpperMethods(cl.Allow[i].Methods)
			}
			for i := range cl.Passthrough {
				cl.Passthrough[i].Line = c.lines[entryKey(tn, cn, "passthrough", i)]
				rules.UpperMethods(cl.Passthrough[i].Methods)
			}
		}
	}
}

func entryKey(tenant, class, list string, i int) string {
	return fmt.Sprintf("tenants.%s.classes.%s.%s[%d]", tenant, class, list, i)
}

// lineOf returns the line of key, or of its nearest ancestor known, 0 if none.
func (c *Config) lineOf(key string) int {
	for key != "" {
		if l, ok := c.lines[key]; ok {
			return l
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return 0
}

var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// yamlError turns the library's "yaml: line 3: ..." messages into FieldErrors.
func yamlError(file string, err error) error {
	var msgs []string
	if te, ok := errors.AsType[*yaml.TypeError](err); ok {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var errs []error
	for _, m := range msgs {
		fe := &FieldError{File: file, Msg: "yaml: " + strings.TrimPrefix(m, "yaml: ")}
		if sm := yamlLine.FindStringSubmatch(m); sm != nil {
			fe.Line, _ = strconv.Atoi(sm[1])
			fe.Msg = "yaml: " + sm[2]
		}
		errs = append(errs, fe)
	}
	return errors.Join(errs...)
}

// walker checks a YAML node tree against the Go types it will be decoded into, so that
// each problem can name its line and key path, and records the line of every key.
type walker struct {
	file  string
	lines map[string]int
	errs  []error
	// seen holds the anchors already walked: an alias is checked once, however often it is
	// used, so aliases cannot blow up the walk.
	seen map[*yaml.Node]bool
}

const maxDepth = 32

var (
	unmarshalerType     = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func (w *walker) fail(n *yaml.Node, key, format string, args ...any) {
	w.errs = append(w.errs, &FieldError{File: w.file, Line: n.Line, Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (w *walker) walk(n *yaml.Node, t reflect.Type, key string, depth int) {
	if depth > maxDepth {
		w.fail(n, key, "nested too deeply")
		return
	}
	if n.Kind == yaml.AliasNode {
		if w.seen[n.Alias] {
			return
		}
		w.seen[n.Alias] = true
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // the zero value
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		w.checkScalar(n, t, key)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		w.walkMapping(n, key, depth, func(k string) (reflect.Type, bool) {
			for i := range t.NumField() {
				f := t.Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
				if name == k && name != "-" && f.IsExported() {
					return f.Type, true
				}
			}
			return nil, false
		}, func() []string {
			var names []string
			for i := range t.NumField() {
				name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
				if name != "" && name != "-" {
					names = append(names, name)
				}
			}
			return names
		})
	case reflect.Map:
		w.walkMapping(n, key, depth, func(string) (reflect.Type, bool) { return t.Elem(), true }, nil)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.fail(n, key, "want a list, got %s", describe(n))
			return
		}
		for i, el := range n.Content {
			k := fmt.Sprintf("%s[%d]", key, i)
			w.lines[k] = el.Line
			w.walk(el, t.Elem(), k, depth+1)
		}
	default:
		w.checkScalar(n, t, key)
	}
}

// walkMapping checks a mapping's keys: scalars, each once, each known (field returns the
// type of a key's value). known lists the keys for the error message; nil for maps.
func (w *walker) walkMapping(n *yaml.Node, key string, depth int, field func(string) (reflect.Type, bool), known func() []string) {
	if n.Kind != yaml.MappingNode {
		w.fail(n, key, "want a mapping, got %s", describe(n))
		return
	}
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if kn.Kind != yaml.ScalarNode {
			w.fail(kn, key, "want a plain key, got %s", describe(kn))
			continue
		}
		k := join(key, kn.Value)
		if kn.ShortTag() == "!!merge" {
			w.fail(kn, key, "merge keys (<<) are not supported")
			continue
		}
		if l, dup := first[kn.Value]; dup {
			w.fail(kn, k, "duplicate key %q (first defined at line %d)", kn.Value, l)
			continue
		}
		first[kn.Value] = kn.Line
		ft, ok := field(kn.Value)
		if !ok {
			names := known()
			slices.Sort(names)
			w.fail(kn, k, "unknown key %q (known keys here: %s)", kn.Value, strings.Join(names, ", "))
			continue
		}
		w.lines[k] = kn.Line
		w.walk(vn, ft, k, depth+1)
	}
}

// checkScalar decodes n into a fresh value of type t to see that it fits.
func (w *walker) checkScalar(n *yaml.Node, t reflect.Type, key string) {
	if n.Kind != yaml.ScalarNode {
		w.fail(n, key, "want a single value (%s), got %s", typeName(t), describe(n))
		return
	}
	v := reflect.New(t)
	if err := n.Decode(v.Interface()); err != nil {
		msg := err.Error()
		if _, ok := errors.AsType[*yaml.TypeError](err); ok {
			msg = fmt.Sprintf("want %s, got %q", typeName(t), n.Value)
		}
		w.fail(n, key, "%s", msg)
	}
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	return t.Name()
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return fmt.Sprintf("%q", n.Value)
}

func join(key, k string) string {
	if key == "" {
		return k
	}
	return key + "." + k
}

// FieldErr returns a FieldError at key's line (or its nearest parent's),
// for checks made outside this package (`sluice config check`).
func (c *Config) FieldErr(key, format string, args ...any) *FieldError {
	return &FieldError{File: c.Path, Line: c.lineOf(key), Key: key, Msg: fmt.Sprintf(format, args...)}
}
