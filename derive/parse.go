package derive

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// Parsers shared by several ecosystems: a manifest that only selects, a lockfile read by
// one regexp, TOML read line by line.

// selects returns a parser that selects preset and reads nothing.
func selects(preset string) parser {
	return func(d *deriver, file string, _ []byte) { d.selectPreset(preset, file) }
}

// lockParser selects preset ("" for none) and suggests every URL the regexp's first
// group captures.
func lockParser(preset, expr, why string) parser {
	re := regexp.MustCompile(expr)
	return func(d *deriver, file string, data []byte) {
		if preset != "" {
			d.selectPreset(preset, file)
		}
		for _, m := range re.FindAllSubmatchIndex(data, -1) {
			for u := range strings.SplitSeq(string(data[m[2]:m[3]]), ";") {
				d.suggest(file, lineAt(data, m[2]), u, why)
			}
		}
	}
}

// lineOfString returns the line of the first occurrence of s as a JSON string, 0 if none.
func lineOfString(data []byte, s string) int {
	if s == "" {
		return 0
	}
	b, _ := json.Marshal(s)
	if i := bytes.Index(data, b); i >= 0 {
		return lineAt(data, i)
	}
	return 0
}

var tomlKeyRE = regexp.MustCompile(`^\s*"?([A-Za-z0-9_.-]+)"?\s*=\s*(.*)$`)
var quotedRE = regexp.MustCompile(`"([^"]*)"|'([^']*)'`)

// gitURLRE finds PEP 508 direct references and other "git+" URLs inside strings.
var gitURLRE = regexp.MustCompile(`git\+[a-z]+://[^\s"',]+`)

// tomlParser selects preset ("" for none) and suggests the URLs under the given keys
// (in plain, inline-table and multi-line array values) and every "git+" URL.
func tomlParser(preset string, keys map[string]string) parser {
	return func(d *deriver, file string, data []byte) {
		if preset != "" {
			d.selectPreset(preset, file)
		}
		inArray := ""
		forLines(data, func(n int, line string) {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				return
			}
			if inArray != "" {
				for _, q := range quoted(line) {
					d.suggest(file, n, q, inArray)
				}
				if strings.Contains(line, "]") {
					inArray = ""
				}
				return
			}
			for _, u := range gitURLRE.FindAllString(line, -1) {
				d.suggestGit(file, n, u, "git dependency")
			}
			// Keys in inline tables too: foo = { git = "https://..." }.
			for _, part := range strings.Split(line, ",") {
				part = strings.TrimLeft(part, " {")
				if i := strings.Index(part, "{"); i >= 0 {
					part = part[i+1:]
				}
				m := tomlKeyRE.FindStringSubmatch(part)
				if m == nil {
					continue
				}
				why, ok := keys[m[1]]
				if !ok {
					continue
				}
				qs := quoted(m[2])
				for _, q := range qs {
					if why == "git dependency" {
						d.suggestGit(file, n, q, why)
					} else {
						d.suggest(file, n, q, why)
					}
				}
				if strings.HasPrefix(strings.TrimSpace(m[2]), "[") && !strings.Contains(m[2], "]") {
					inArray = why
				}
			}
		})
	}
}

func quoted(s string) []string {
	var out []string
	for _, m := range quotedRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1]+m[2])
	}
	return out
}
