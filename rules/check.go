package rules

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Target is an http(s) URL as the gateway sees it: host and port, the port
// defaulting by scheme, and the escaped path.
type Target struct {
	Scheme, Host string
	Port         int
	Path         string
}

// ParseTarget parses an absolute http:// or https:// URL.
func ParseTarget(raw string) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return Target{}, fmt.Errorf("%q: want an http:// or https:// URL", raw)
	}
	t := Target{Scheme: u.Scheme, Host: u.Hostname(), Port: 443, Path: u.EscapedPath()}
	if u.Scheme == "http" {
		t.Port = 80
	}
	if ps := u.Port(); ps != "" {
		if t.Port, err = strconv.Atoi(ps); err != nil || t.Port < 1 || t.Port > 65535 {
			return Target{}, fmt.Errorf("bad port in %q", raw)
		}
	}
	return t, nil
}

// URLCheck is what a policy decides for one request to a URL (`sluice policy check`).
type URLCheck struct {
	URL    string `json:"url"`
	Method string `json:"method"`
	// Stage is where the decision fell: the CONNECT of an https URL that is denied
	// or tunnelled blind, else the request.
	Stage   string `json:"stage"`
	Action  string `json:"action"`
	Reason  string `json:"reason,omitempty"`
	Entry   *Entry `json:"entry,omitempty"`
	Origin  string `json:"origin,omitempty"`
	Allowed bool   `json:"allowed"`
	// Decision is the decision itself.
	Decision Decision `json:"-"`
	// Trace is each entry considered at each stage decided (CheckTraced).
	Trace []TraceLine `json:"trace,omitempty"`
}

// TraceLine is one entry a check considered, flattened for people and JSON.
type TraceLine struct {
	Stage   string `json:"stage"`
	List    string `json:"list"`
	Host    string `json:"host"`
	Limits  string `json:"limits,omitempty"`
	Origin  string `json:"origin"`
	Matched bool   `json:"matched"`
	Why     string `json:"why,omitempty"`
}

// Check decides a request with method to t as the gateway would: for https, the
// CONNECT first, then, where it is inspected, the request inside.
func (p *EffectivePolicy) Check(method string, t Target) URLCheck { return p.check(method, t, false) }

// CheckTraced is Check with the trace of every stage it decided.
func (p *EffectivePolicy) CheckTraced(method string, t Target) URLCheck {
	return p.check(method, t, true)
}

func (p *EffectivePolicy) check(method string, t Target, trace bool) URLCheck {
	path := t.Path
	if u, err := url.PathUnescape(path); err == nil {
		path = u
	}
	res := URLCheck{URL: (&url.URL{Scheme: t.Scheme, Host: net.JoinHostPort(t.Host, strconv.Itoa(t.Port)), Path: path}).String(),
		Method: strings.ToUpper(method)}
	var d Decision
	if t.Scheme == "https" {
		res.Stage = StageConnect.String()
		q := Query{Host: t.Host, Port: t.Port, Stage: StageConnect}
		d = p.Decide(q)
		res.addTrace(trace, p, q)
	}
	if t.Scheme == "http" || d.Action == Inspect {
		res.Stage = StageRequest.String()
		q := Query{Host: t.Host, Port: t.Port, Method: res.Method, Path: t.Path, Stage: StageRequest}
		d = p.Decide(q)
		res.addTrace(trace, p, q)
	}
	res.Decision = d
	res.Action, res.Reason, res.Entry = d.Action.String(), d.Reason, d.Entry
	res.Allowed = d.Action != Deny
	if d.Entry != nil {
		res.Origin = d.Entry.Origin.String()
	}
	return res
}

// addTrace appends the trace of q when on.
func (r *URLCheck) addTrace(on bool, p *EffectivePolicy, q Query) {
	if !on {
		return
	}
	t := p.Trace(q)
	if len(t.Steps) == 0 {
		r.Trace = append(r.Trace, TraceLine{Stage: t.Stage.String(), Why: "no entry to consider"})
	}
	for _, s := range t.Steps {
		r.Trace = append(r.Trace, TraceLine{Stage: t.Stage.String(), List: s.List, Host: s.Entry.Host,
			Limits: s.Entry.Limits(), Origin: s.Origin, Matched: s.Matched, Why: s.Why})
	}
}

// Limits describes an entry's ports, methods, paths and flags in one line, for
// people ("ports 443,80  methods any").
func (en Entry) Limits() string {
	var parts []string
	ports := "443,80"
	if len(en.Ports) > 0 {
		ps := make([]string, len(en.Ports))
		for i, p := range en.Ports {
			ps[i] = strconv.Itoa(p)
		}
		ports = strings.Join(ps, ",")
	}
	parts = append(parts, "ports "+ports)
	methods := "any"
	if len(en.Methods) > 0 {
		methods = strings.Join(en.Methods, ",")
	}
	parts = append(parts, "methods "+methods)
	if len(en.Paths) > 0 {
		parts = append(parts, "paths "+strings.Join(en.Paths, ","))
	}
	if en.WebSocket {
		parts = append(parts, "websocket")
	}
	if len(en.AllowAddresses) > 0 {
		parts = append(parts, "allow_addresses "+strings.Join(en.AllowAddresses, ","))
	}
	return strings.Join(parts, "  ")
}

// Where says what selected an entry, leaving out the preset it expanded from.
func (o Origin) Where() string {
	o.Preset = PresetRef{}
	return o.String()
}
