package gateway

import "net/http"

// The tag `sluice doctor` puts on its probes, so that their refusals are counted and
// logged but not stored as incidents. It hides nothing a sandbox could use: a tagged
// request is decided, scanned and refused like any other, and its findings are
// recorded as usual; only the refusal's incident is left out.
const (
	ProbeHeader = "Sluice-Probe"
	ProbeDoctor = "doctor"
)

// IsProbe reports whether r carries the doctor's tag.
func IsProbe(r *http.Request) bool { return r != nil && r.Header.Get(ProbeHeader) == ProbeDoctor }
