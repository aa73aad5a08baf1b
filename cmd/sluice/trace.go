package main

import (
	"fmt"
	"io"

	"github.com/sluice-egress/sluice/rules"
)

// traceLine is one entry `policy check --trace` considered.
type traceLine struct {
	Stage   string `json:"stage"`
	List    string `json:"list"`
	Host    string `json:"host"`
	Limits  string `json:"limits,omitempty"`
	Origin  string `json:"origin"`
	Matched bool   `json:"matched"`
	Why     string `json:"why,omitempty"`
}

// addTrace appends t's steps when on.
func (r *checkResult) addTrace(on bool, t rules.Trace) {
	if !on {
		return
	}
	if len(t.Steps) == 0 {
		r.Trace = append(r.Trace, traceLine{Stage: t.Stage.String(), Why: "no entry to consider"})
	}
	for _, s := range t.Steps {
		r.Trace = append(r.Trace, traceLine{Stage: t.Stage.String(), List: s.List, Host: s.Entry.Host,
			Limits: entryLimits(s.Entry), Origin: s.Origin, Matched: s.Matched, Why: s.Why})
	}
}

func (r *checkResult) printTrace(w io.Writer) {
	if len(r.Trace) == 0 {
		return
	}
	fmt.Fprintln(w, "trace:")
	for _, l := range r.Trace {
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
