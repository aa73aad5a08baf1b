package explain

import (
	"fmt"
	"io"

	"github.com/sluice-egress/sluice/rules"
)

// Trace writes what `policy check --trace` considered: each stage and entry,
// and why it matched or not. Nothing when trace is empty.
func Trace(w io.Writer, trace []rules.TraceLine) {
	if len(trace) == 0 {
		return
	}
	fmt.Fprintln(w, "trace:")
	for _, l := range trace {
		verdict := "matched"
		if !l.Matched {
			verdict = l.Why
		}
		if l.Host == "" {
			fmt.Fprintf(w, "  %-7s %s\n", l.Stage, verdict)
			continue
		}
		fmt.Fprintf(w, "  %-7s %-18s %s %s (%s): %s\n", l.Stage, l.List, l.Host, l.Limits, l.Origin, verdict)
	}
}
