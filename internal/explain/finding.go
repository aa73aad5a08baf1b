package explain

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/sluice-egress/sluice/scanner"
)

// findingJSON is one finding as `sluice scan --json` prints it.
type findingJSON struct {
	File        string `json:"file"`
	Line        int    `json:"line,omitempty"`
	Kind        string `json:"kind"`
	Rule        string `json:"rule"`
	Where       string `json:"where"`
	Decoding    string `json:"decoding,omitempty"`
	Snippet     string `json:"snippet"`
	Fingerprint string `json:"fingerprint"`
	Action      string `json:"action"`
}

// Finding writes one finding of the file name, as a line of text or of JSON.
// The snippet is the scanner's, already redacted.
func Finding(w io.Writer, name string, f scanner.Finding, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(findingJSON{File: name, Line: f.Line, Kind: f.Kind, Rule: f.Rule, Where: f.Where, Decoding: f.Decoding,
			Snippet: f.Snippet, Fingerprint: f.Fingerprint, Action: f.Action.String()})
		fmt.Fprintln(w, string(b))
		return
	}
	loc := name
	if f.Line > 0 {
		loc = fmt.Sprintf("%s:%d", name, f.Line)
	}
	dec := ""
	if f.Decoding != "" {
		dec = " (" + f.Decoding + ")"
	}
	fmt.Fprintf(w, "%s: %s %s at %s%s: %s [%s, fp %s]\n", loc, f.Kind, f.Rule, f.Where, dec, f.Snippet, f.Action, f.Fingerprint)
}
