package scanner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// FileScan scans files, directory trees and stdin with ScanText, for
// `sluice scan`.
type FileScan struct {
	// MaxBytes is the largest file scanned; a larger one is reported to
	// Skipped and not read further. Zero: 64 MiB.
	MaxBytes int64
	// Stdin is read for the target "-". Nil: "-" reads nothing.
	Stdin io.Reader
	// Found is called for each finding in file name. Nil: findings are counted only.
	Found func(name string, f Finding)
	// Skipped is called for a file over MaxBytes. Nil: skipped silently.
	Skipped func(name string)
	// Allowed reports whether the client may reach host, for exfil links
	// (Request.Allowed). Nil: links are not checked.
	Allowed func(host string) bool
}

// Run scans each target ("-" for Stdin; a directory is walked, .git and
// anything but regular files left out) and returns the number of findings.
func (fsc FileScan) Run(ctx context.Context, s *Scanner, targets []string) (int, error) {
	found := 0
	one := func(name string, r io.Reader) error {
		n, err := fsc.scan(ctx, s, name, r)
		found += n
		return err
	}
	for _, t := range targets {
		if t == "-" {
			if fsc.Stdin == nil {
				continue
			}
			if err := one("-", fsc.Stdin); err != nil {
				return found, err
			}
			continue
		}
		err := filepath.WalkDir(t, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == ".git" {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			return one(path, f)
		})
		if err != nil {
			return found, err
		}
	}
	return found, nil
}

func (fsc FileScan) scan(ctx context.Context, s *Scanner, name string, r io.Reader) (int, error) {
	max := fsc.MaxBytes
	if max <= 0 {
		max = 64 << 20
	}
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return 0, err
	}
	if int64(len(data)) > max {
		if fsc.Skipped != nil {
			fsc.Skipped(name)
		}
		return 0, nil
	}
	fs, err := s.ScanTextFor(ctx, name, data, fsc.Allowed)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	if fsc.Found != nil {
		for _, f := range fs {
			fsc.Found(name, f)
		}
	}
	return len(fs), nil
}

// ScanTextFor is ScanText that also reports links to hosts allowed says
// the client may not reach, as Request.Allowed does for a request (nil:
// links are not checked), so that a file scan finds what the gateway would.
func (s *Scanner) ScanTextFor(ctx context.Context, name string, data []byte, allowed func(host string) bool) ([]Finding, error) {
	if err := s.init(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	ct := ""
	if strings.HasSuffix(name, ".json") || json1(data) {
		ct = "application/json"
	}
	var req *Request
	if allowed != nil {
		req = &Request{Allowed: allowed}
	}
	// A copy: the findings' secrets share the text, and data is the caller's.
	found, err := s.inspect(ctx, req, bodySegments(bytes.Clone(data), ct, nil, nil))
	if err != nil {
		return nil, err
	}
	res := &Result{}
	s.decide("", "", dropCovered(found), res)
	return res.Findings, nil
}
