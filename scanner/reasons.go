package scanner

// Reasons a finding gives for a refusal (the Sluice-Reason header), by kind.
const (
	ReasonCanary    = "canary-detected"
	ReasonPhantom   = "phantom-misuse"
	ReasonSecret    = "secret-detected"
	ReasonExfilLink = "exfil-link"
	ReasonOversize  = "body-too-large"
	ReasonExfilHost = "exfil-hostname"
	ReasonInjection = "prompt-injection"
)

// reasons is the one table of the reasons findings give, by kind, strongest
// first: a blocked request gives the first one among its blocking findings.
var reasons = []struct{ kind, reason string }{
	{KindCanary, ReasonCanary},
	{KindPhantom, ReasonPhantom},
	{KindSecret, ReasonSecret},
	{KindExfilHost, ReasonExfilHost},
	{KindExfilLink, ReasonExfilLink},
	{KindInjection, ReasonInjection},
	{KindOversize, ReasonOversize},
}

// KindReason is the reason a finding of this kind gives; ReasonSecret for a
// kind without its own.
func KindReason(kind string) string {
	for _, r := range reasons {
		if r.kind == kind {
			return r.reason
		}
	}
	return ReasonSecret
}

// reasonFor is the reason of the strongest blocking finding of fs.
func reasonFor(fs []Finding) string {
	for _, r := range reasons {
		for _, f := range fs {
			if f.Kind == r.kind && f.Action == Block {
				return r.reason
			}
		}
	}
	return ReasonSecret
}
