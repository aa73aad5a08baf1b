package scanner

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Options are the plain settings Build makes a Scanner of.
type Options struct {
	// RulePacks are rule pack files (TOML), compiled with the default rules and the
	// shipped packs.
	RulePacks []string
	// Policy is the scanning policy.
	Policy Policy
	// DataDir holds the fingerprint key (KeyFile) and the canaries.
	DataDir string
	// CreateKey creates the fingerprint key when DataDir has none. Without it, a
	// missing key stays nil and the scanner uses a per-process one.
	CreateKey bool
	// MaxBodyBytes, DecodeDepth, Timeout, CleanCacheEntries and
	// TrailEntries are the Scanner's fields of these names.
	MaxBodyBytes      int64
	DecodeDepth       int
	Timeout           time.Duration
	CleanCacheEntries int
	TrailEntries      int
}

// Build reads the rule packs and the key and compiles the rules, once: a bad rule
// pack is an error here, not at the first request.
func Build(o Options) (*Scanner, error) {
	var packs []Pack
	for _, path := range o.RulePacks {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("scanning.rule_packs: %w", err)
		}
		packs = append(packs, Pack{Name: path, Data: b})
	}
	rs, err := LoadRules(packs...)
	if err != nil {
		return nil, err
	}
	go bmpFolds() // a few milliseconds at start, not on the first request with a byte from 0x80
	var key []byte
	if _, err := os.Stat(filepath.Join(o.DataDir, KeyFile)); o.CreateKey || err == nil {
		if key, err = LoadOrCreateKey(o.DataDir); err != nil {
			return nil, err
		}
	}
	return &Scanner{
		Rules: rs, Policy: o.Policy, Key: key,
		MaxBodyBytes:      o.MaxBodyBytes,
		DecodeDepth:       o.DecodeDepth,
		Timeout:           o.Timeout,
		CleanCacheEntries: o.CleanCacheEntries,
		TrailEntries:      o.TrailEntries,
		Canaries:          &CanaryStore{Dir: o.DataDir, Key: key},
	}, nil
}
