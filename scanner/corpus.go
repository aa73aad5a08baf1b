package scanner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ManifestFile is the name of a corpus's manifest in its directory.
const ManifestFile = "manifest.yaml"

// Manifest says what the rules must find in each file of a corpus:
//
//	cases:
//	  - file: secrets/github.txt       # relative to the corpus directory
//	    expect: [github-pat]           # rules that must fire (each at least once)
//	  - file: benign/package-lock.json
//	    expect: []                     # nothing may fire ...
//	    allow: [generic-api-key]       # ... except these, which count neither way
//	    no_block: true                 # ... and findings that would only alert
//
// Files may hold ${fake:KIND} (or ${fake:KIND:NAME}) placeholders, replaced
// by fresh fakes (FakeSecret) at run time, so that no token is committed.
type Manifest struct {
	Cases []CorpusCase `yaml:"cases"`
}

// CorpusCase is one file and its expectations.
type CorpusCase struct {
	File    string   `yaml:"file"`
	Expect  []string `yaml:"expect"`
	Allow   []string `yaml:"allow"`
	NoBlock bool     `yaml:"no_block"`
}

// RuleStats counts one rule's outcomes over a corpus.
type RuleStats struct {
	Rule           string
	TruePositives  int // expected and found
	FalsePositives int // found where not expected
	FalseNegatives int // expected and not found
}

// CorpusReport is the outcome of RunCorpus.
type CorpusReport struct {
	// Rules that fired or were expected, sorted by id.
	Rules []RuleStats
	// Failures name each false positive and negative: file, rule, where.
	Failures []string
	// Files is the number of files scanned.
	Files int
}

// LoadManifest reads dir/manifest.yaml strictly.
func LoadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("corpus: %s: %w", path, err)
	}
	for i, c := range m.Cases {
		if c.File == "" || filepath.IsAbs(c.File) || strings.HasPrefix(filepath.Clean(c.File), "..") {
			return nil, fmt.Errorf("corpus: %s: cases[%d]: file %q must be a path inside the corpus", path, i, c.File)
		}
	}
	return &m, nil
}

// RunCorpus scans every case of the corpus in dir with s and compares the
// findings with the expectations.
func RunCorpus(ctx context.Context, s *Scanner, dir string) (*CorpusReport, error) {
	m, err := LoadManifest(dir)
	if err != nil {
		return nil, err
	}
	stats := map[string]*RuleStats{}
	stat := func(rule string) *RuleStats {
		if stats[rule] == nil {
			stats[rule] = &RuleStats{Rule: rule}
		}
		return stats[rule]
	}
	rep := &CorpusReport{}
	for _, c := range m.Cases {
		raw, err := os.ReadFile(filepath.Join(dir, c.File))
		if err != nil {
			return nil, fmt.Errorf("corpus: %w", err)
		}
		text, err := ExpandFakes(string(raw))
		if err != nil {
			return nil, fmt.Errorf("corpus: %s: %w", c.File, err)
		}
		found, err := s.ScanText(ctx, c.File, []byte(text))
		if err != nil {
			return nil, fmt.Errorf("corpus: %s: %w", c.File, err)
		}
		rep.Files++
		fired := map[string]bool{}
		for _, f := range found {
			rule := f.Rule
			if f.Kind == KindCanary {
				rule = RuleCanary
			}
			fired[rule] = true
			switch {
			case slices.Contains(c.Expect, rule):
			case slices.Contains(c.Allow, rule), c.NoBlock && f.Action != Block:
			default:
				stat(rule).FalsePositives++
				rep.Failures = append(rep.Failures, fmt.Sprintf("%s: false positive %s at %s (%s)", c.File, rule, f.Where, f.Snippet))
			}
		}
		for _, rule := range c.Expect {
			if fired[rule] {
				stat(rule).TruePositives++
			} else {
				stat(rule).FalseNegatives++
				rep.Failures = append(rep.Failures, fmt.Sprintf("%s: false negative: %s not found", c.File, rule))
			}
		}
	}
	for _, k := range sortedKeys(stats) {
		rep.Rules = append(rep.Rules, *stats[k])
	}
	return rep, nil
}
