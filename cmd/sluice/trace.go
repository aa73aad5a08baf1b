package main

import (
	"fmt"
	"io"

	"github.com/sluice-egress/sluice/rules"
)

// printTrace prints what `policy check --trace` considered.
func printTrace(w io.Writer, trace []rules.TraceLine) {
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
