package gateway

import (
	"net/http"
	"testing"

	"github.com/sluice-egress/sluice/scanner"
)

// The scan memory a body reserves covers the whole buffer the scanner
// reads it into, rounding to the buffer's size class included, with the
// scanner sluice serve runs (a Holder).
func TestBodyReservationCountsTheScanBuffer(t *testing.T) {
	h := scanner.NewHolder(&scanner.Scanner{})
	g := &Gateway{Scanner: h}
	for _, n := range []int64{1000, 200_000, 1 << 20, 3_000_001} {
		r := &http.Request{ContentLength: n, Header: http.Header{}}
		got := g.bodyReservation(r, 10<<20)
		if want := n + h.ScanFootprint(n); got != want || (n > 64<<10 && got <= n+1) {
			t.Errorf("a %d-byte body reserves %d bytes, want %d (its buffer's size class)", n, got, want)
		}
	}
}
