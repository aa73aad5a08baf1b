package doctor

import (
	"fmt"
	"io"
	"strings"
)

// Report prints one line per probe and a verdict, and fails unless every
// required probe positively showed enforcement: an inconclusive probe fails
// the report too.
func Report(ps []Probe, w io.Writer) error {
	for _, p := range ps {
		fmt.Fprintln(w, p)
	}
	required := 0
	for _, p := range ps {
		if p.Required() {
			required++
		}
	}
	if ok, notPassed := Proven(ps); !ok {
		fmt.Fprintf(w, "doctor: %d of %d required probes did not pass\n", notPassed, required)
		return fmt.Errorf("doctor: %d of %d required probes did not pass: enforcement is not proven", notPassed, required)
	}
	fmt.Fprintf(w, "doctor: all %d required probes passed\n", required)
	return nil
}

// ProxyURL is how a proxy given to the doctor is written: "host:port" means
// http://host:port.
func ProxyURL(raw string) string {
	if raw != "" && !strings.Contains(raw, "://") {
		return "http://" + raw
	}
	return raw
}
