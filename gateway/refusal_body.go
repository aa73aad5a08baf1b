package gateway

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/rules"
)

// A refusal's body tells the agent that got it what was refused, by whose
// policy, and how to ask for it: its first line is the one line humans and
// scripts always got ("sluice: REASON: MESSAGE"), the lines after it the
// details; with Accept: application/json the same as one JSON object. It
// holds nothing the run does not already have: the host, port, method and
// path it sent (redacted as the incident is), its own tenant, class and run,
// the rule that found a secret and where, never the secret.

// policyReasons are the refusals a reviewer can lift with a grant: their
// bodies say how to ask.
var policyReasons = map[string]bool{
	rules.ReasonHostNotAllowed:      true,
	rules.ReasonPortNotAllowed:      true,
	rules.ReasonMethodNotAllowed:    true,
	rules.ReasonPathNotAllowed:      true,
	rules.ReasonWebSocketNotAllowed: true,
}

// refusalJSON is the body of a refusal for a client that accepts JSON.
type refusalJSON struct {
	// Error is the Sluice-Reason.
	Error    string       `json:"error"`
	Message  string       `json:"message"`
	Incident string       `json:"incident,omitempty"`
	Refused  *refusedJSON `json:"refused,omitempty"`
	Policy   *policyJSON  `json:"policy,omitempty"`
	// Found is the rule that found a secret and where: "github-pat in json:$.note".
	Found string   `json:"found,omitempty"`
	Ask   *askJSON `json:"ask,omitempty"`
}

// refusedJSON is what was refused, as it was decided: a CONNECT has no path.
type refusedJSON struct {
	Method string `json:"method,omitempty"`
	Host   string `json:"host"`
	Port   int    `json:"port,omitempty"`
	Path   string `json:"path,omitempty"`
}

type policyJSON struct {
	Tenant string `json:"tenant"`
	Class  string `json:"class"`
	Run    string `json:"run,omitempty"`
}

// askJSON says how to file an access request from inside the sandbox.
type askJSON struct {
	Method string `json:"method"`
	URL    string `json:"url"`
	// Body is a ready-to-send request body; the agent fills in its reason.
	Body filingJSON `json:"body"`
	// Curl is the same as one command line, through the sandbox's proxy.
	Curl string `json:"curl"`
}

// refusalView builds what a refusal's body says. inc is the incident id ("" when none
// was recorded).
func refusalView(r *http.Request, f refusal, inc string) refusalJSON {
	v := refusalJSON{Error: f.reason, Message: f.msg, Incident: inc, Found: f.found}
	if f.id.Tenant == "" {
		return v // not identified: nothing is said about any policy
	}
	v.Policy = &policyJSON{Tenant: f.id.Tenant, Class: f.id.Class, Run: f.id.Run}
	host, port := f.host, f.port
	if host == "" && r != nil {
		host, port = splitHostPortDefault(r.Host, 0)
	}
	method, path := f.method, f.path
	if method == "" && r != nil {
		method = r.Method
	}
	if method == http.MethodConnect {
		path = ""
	}
	v.Refused = &refusedJSON{Method: method, Host: incident.RedactHost(host), Port: port, Path: incident.RedactPath(path)}
	if policyReasons[f.reason] && host != "" {
		v.Ask = askFor(v.Refused)
	}
	return v
}

// askFor is the ready-to-send access request for what was refused: exactly that host
// and port, and for a request its method and path.
func askFor(rf *refusedJSON) *askJSON {
	body := filingJSON{Host: rf.Host, Reason: "say why this run needs it"}
	if rf.Port > 0 {
		body.Ports = []int{rf.Port}
	}
	if rf.Method != "" && rf.Method != http.MethodConnect {
		body.Methods = []string{rf.Method}
	}
	if rf.Path != "" {
		body.Paths = []string{rf.Path}
	}
	b, _ := json.Marshal(body)
	return &askJSON{Method: http.MethodPost, URL: FilingURL, Body: body,
		Curl: "curl -sS --proxy \"$HTTP_PROXY\" -H 'Content-Type: application/json' --data " + shellQuote(string(b)) + " " + FilingURL}
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// wantsJSON reports whether the client asked for JSON (Accept: application/json).
func wantsJSON(r *http.Request) bool {
	if r == nil {
		return false
	}
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
				return true
			}
		}
	}
	return false
}

// writeRefusalFor writes the refusal f of r, as text or (Accept: application/json)
// JSON, with the same status and headers as writeRefusal.
func writeRefusalFor(w http.ResponseWriter, r *http.Request, f refusal, inc string) {
	v := refusalView(r, f, inc)
	if !wantsJSON(r) {
		writeRefusal(w, f.status, f.reason, inc, f.msg+refusalDetails(v))
		return
	}
	w.Header().Set("Sluice-Reason", f.reason)
	if inc != "" {
		w.Header().Set("Sluice-Incident", inc)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if refusalCloses(f.status) {
		w.Header().Set("Connection", "close")
	}
	w.WriteHeader(f.status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// refusalDetails are the lines after the first of a text refusal ("" when there are
// none): each "key: value", then the example indented.
func refusalDetails(v refusalJSON) string {
	var b strings.Builder
	line := func(k, format string, args ...any) {
		fmt.Fprintf(&b, "\n%s: %s", k, fmt.Sprintf(format, args...))
	}
	if rf := v.Refused; rf != nil {
		what := rf.Method
		target := rf.Host
		if rf.Port > 0 {
			target += ":" + strconv.Itoa(rf.Port)
		}
		if what != "" {
			what += " "
		}
		line("refused", "%s%s%s", what, target, rf.Path)
	}
	if p := v.Policy; p != nil {
		s := "tenant " + p.Tenant + ", class " + p.Class
		if p.Run != "" {
			s += ", run " + p.Run
		}
		line("policy", "%s", s)
	}
	if v.Found != "" {
		line("found", "%s (the value itself is never shown or kept)", v.Found)
	}
	if v.Incident != "" {
		line("incident", "%s", v.Incident)
	}
	if a := v.Ask; a != nil {
		line("ask", "%s %s through this sandbox's proxy, with its own proxy credentials (JSON body: host, ports, methods, paths, reason)", a.Method, a.URL)
		line("example", "%s", a.Curl)
	}
	return b.String()
}
