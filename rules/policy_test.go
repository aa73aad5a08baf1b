package rules

import (
	"errors"
	"testing"

	"go.yaml.in/yaml/v3"
)

// testPreset is a preset only tests know, beside the shipped ones.
const testPreset = "test-mirror"

func init() {
	presets[testPreset] = &Preset{Name: testPreset, Version: 1, Entries: []PresetEntry{
		{Host: "mirror.preset.test", Methods: []string{"GET", "HEAD"}},
		{Host: "*.files.preset.test"},
	}}
}

// policyFile is the policy part of a config file, for tests: the config package owns the
// real decoding, which rules may not import.
type policyFile struct {
	Upstream struct {
		Hosts map[string]string `yaml:"hosts"`
	} `yaml:"upstream"`
	Presets struct {
		Hosts map[string][]string `yaml:"hosts"`
	} `yaml:"presets"`
	Tenants map[string]*struct {
		TokenFile string            `yaml:"token_file"`
		TokenEnv  string            `yaml:"token_env"`
		Classes   map[string]*Class `yaml:"classes"`
		Mode      string            `yaml:"mode"`
		// TokenClasses as config's tenants.NAME.token_classes.
		TokenClasses []string `yaml:"token_classes"`
	} `yaml:"tenants"`
}

// MustPolicy decodes the policy part of a config file written in YAML, with each
// entry's line, as the config package would.
func MustPolicy(tb testing.TB, yamlText, file string) *Policy {
	tb.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(yamlText), &doc); err != nil {
		tb.Fatal(err)
	}
	var pf policyFile
	if err := doc.Decode(&pf); err != nil {
		tb.Fatal(err)
	}
	p := &Policy{File: file, Tenants: map[string]*Tenant{}, PresetHosts: pf.Presets.Hosts, UpstreamHosts: pf.Upstream.Hosts}
	for tn, t := range pf.Tenants {
		if t == nil {
			p.Tenants[tn] = nil
			continue
		}
		for cn, cl := range t.Classes {
			if cl == nil {
				cl = &Class{}
				t.Classes[cn] = cl
			}
			for list, entries := range map[string][]Entry{"allow": cl.Allow, "passthrough": cl.Passthrough} {
				items := child(child(child(child(doc.Content[0], "tenants"), tn), "classes"), cn)
				items = child(items, list)
				for i := range entries {
					entries[i].Line = items.Content[i].Line
					UpperMethods(entries[i].Methods)
				}
			}
		}
		p.Tenants[tn] = &Tenant{Classes: t.Classes, Mode: t.Mode, TokenClasses: t.TokenClasses}
	}
	if len(pf.Tenants) == 0 {
		p.Tenants = nil
	}
	return p
}

// child returns the value of key in mapping n.
func child(n *yaml.Node, key string) *yaml.Node {
	for i := 0; n != nil && i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return &yaml.Node{}
}

// tokens returns a token function over fixed tokens; an unknown tenant has none.
func tokens(m map[string]string) func(string) (string, error) {
	return func(tenant string) (string, error) {
		tok, ok := m[tenant]
		if !ok {
			return "", errors.New("no token")
		}
		return tok, nil
	}
}
