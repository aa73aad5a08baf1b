package scanner

import (
	"context"
	"sync/atomic"
)

// Holder is the scanner in force, swapped whole when a reload changes the scanning
// keys or rule packs. A request is scanned whole by the scanner it started with.
// Make it with NewHolder: the zero Holder holds no scanner.
type Holder struct {
	cur     atomic.Pointer[Scanner]
	retired atomic.Uint64 // CleanHits of the scanners swapped out
}

// NewHolder returns a Holder of sc.
func NewHolder(sc *Scanner) *Holder {
	h := &Holder{}
	h.cur.Store(sc)
	return h
}

// Scan scans with the current scanner.
func (h *Holder) Scan(ctx context.Context, req *Request) (*Result, error) {
	return h.cur.Load().Scan(ctx, req)
}

// Current returns the scanner in use.
func (h *Holder) Current() *Scanner { return h.cur.Load() }

// Rebuild builds the scanner of o for a reload, keeping the current one's
// fingerprint key, canaries and phantoms, so that fingerprints, issued canaries
// and minted phantoms stay valid. A nil Holder keeps nothing. Nothing is swapped.
func (h *Holder) Rebuild(o Options) (*Scanner, error) {
	sc, err := Build(o)
	if err != nil {
		return nil, err
	}
	if h != nil {
		cur := h.Current()
		sc.Key, sc.Canaries, sc.Phantoms = cur.Key, cur.Canaries, cur.Phantoms
	}
	return sc, nil
}

// Swap installs sc.
func (h *Holder) Swap(sc *Scanner) {
	if old := h.cur.Swap(sc); old != nil && old != sc {
		h.retired.Add(old.CleanHits())
	}
}

// CleanHits is how many texts the scanners held, now and before, found
// clean before and did not scan again.
func (h *Holder) CleanHits() uint64 { return h.retired.Load() + h.Current().CleanHits() }

// SafePath masks secrets in a path with the current scanner.
func (h *Holder) SafePath(ctx context.Context, tenant, p string) string {
	return h.cur.Load().SafePath(ctx, tenant, p)
}

// ScanHost checks a host's wildcard-matched labels with the current scanner.
func (h *Holder) ScanHost(ctx context.Context, tenant, host string, wildcardLabels int) (*Result, error) {
	return h.cur.Load().ScanHost(ctx, tenant, host, wildcardLabels)
}
