package gateway

import (
	"context"
	"errors"
	"strconv"

	"github.com/sluice-egress/sluice/scanner"
)

// wsSpliceWindow is how much of the end of one data message is scanned again
// with the start of the next: a secret split across two messages (an agent
// sending "ghp_ABCD" then "EFGH…") is found as one. Secret formats are far
// shorter than this.
const wsSpliceWindow = 256

// wsSplice is what a session keeps of its last data message.
type wsSplice struct {
	tail  []byte          // its last wsSpliceWindow bytes, unmasked
	known map[string]bool // fingerprints found in it, alone or spliced
}

// checkSplice scans the end of the previous data message joined to the start
// of data (message n), after data passed on its own (own: its findings).
// Only secrets that neither message holds alone count, so nothing is
// recorded twice. It returns nil, nil when the message may go on.
func (s *wsSession) checkSplice(n int, data []byte, own []scanner.Finding) ([][]byte, error) {
	prev := s.splice
	s.splice = wsSplice{tail: append([]byte(nil), data[max(0, len(data)-wsSpliceWindow):]...), known: map[string]bool{}}
	for _, f := range own {
		s.splice.known[f.Fingerprint] = true
	}
	if len(prev.tail) == 0 || len(data) == 0 || s.g.Scanner == nil {
		return nil, nil
	}
	head := data[:min(len(data), wsSpliceWindow)]
	joined := append(append(make([]byte, 0, len(prev.tail)+len(head)), prev.tail...), head...)
	ctx := context.WithoutCancel(s.r.Context())
	res, err := s.g.scanMessage(ctx, s.id, s.host, joined)
	if errors.Is(err, errPanicked) {
		s.record(ReasonInternalError)
		return s.close(wsCloseInternalError, ReasonInternalError)
	}
	if err != nil {
		s.record(ReasonScanFailed)
		return s.close(wsCloseInternalError, ReasonScanFailed)
	}
	spliced := &scanner.Result{}
	for _, f := range res.Findings {
		if f.Fingerprint == "" || prev.known[f.Fingerprint] || s.splice.known[f.Fingerprint] {
			continue // no secret, or one a single message holds
		}
		s.splice.known[f.Fingerprint] = true
		spliced.Findings = append(spliced.Findings, f)
		spliced.Verdict = max(spliced.Verdict, f.Action)
	}
	if len(spliced.Findings) == 0 {
		return nil, nil
	}
	where := "websocket:message[" + strconv.Itoa(n-1) + "+" + strconv.Itoa(n) + "]"
	v := s.g.messageVerdict(ctx, s.r, s.id, s.host, s.port, where, spliced)
	switch {
	case v.blocked:
		return s.close(wsClosePolicy, v.reason)
	case v.recErr != nil:
		return s.close(wsCloseInternalError, ReasonIncidentStoreUnavailable)
	}
	return nil, nil
}
