package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/sluice-egress/sluice/rules"
)

// InternalHost is the gateway's own name inside sandboxes: a request to it
// through the proxy (http://sluice.internal/…, or CONNECT sluice.internal:443)
// is answered by the gateway itself with the client's proxy credentials,
// never dialled. It is where a sandbox files access requests.
const InternalHost = "sluice.internal"

// FilingURL is where a sandbox files an access request (POST, JSON).
const FilingURL = "http://" + InternalHost + "/v1/access-requests"

// Desk takes the access requests that sandboxes file through InternalHost.
// cmd plugs the runs service in. Errors wrapping ErrFilingInvalid,
// ErrFilingLimited and ErrFilingNotFound are shown to the client with 400,
// 429 and 404; any other is a 503 whose text goes to the log only.
type Desk interface {
	// File files (or joins: the same run asking for the same thing again)
	// an access request.
	File(ctx context.Context, f Filing) (Filed, error)
	// Status returns a request the identity filed; ErrFilingNotFound for
	// one of another run or tenant.
	Status(ctx context.Context, who rules.Identity, id string) (Filed, error)
	// Await files (or joins) the request of a held refusal and waits until
	// it is decided or ctx ends (then ctx's error).
	Await(ctx context.Context, f Filing) (Filed, error)
}

// Errors a Desk wraps.
var (
	ErrFilingInvalid  = errors.New("invalid access request")
	ErrFilingLimited  = errors.New("too many access requests from this run; wait")
	ErrFilingNotFound = errors.New("no such access request")
)

// Filing is an access request as a sandbox files it.
type Filing struct {
	// Who files: the proxy credentials' identity (a run, or a tenant token).
	Who  rules.Identity
	Host string
	// Ports, Methods and Paths narrow the request; empty: the policy's
	// defaults (443 and 80, any method, any path).
	Ports   []int
	Methods []string
	Paths   []string
	// Reason is the agent's free text: stored and shown escaped, never
	// rendered.
	Reason string
	// Incident is the refusal's incident id, when the request answers one.
	Incident string
}

// Filed is an access request as the sandbox that filed it sees it.
type Filed struct {
	ID    string `json:"id"`
	State string `json:"state"`
	Host  string `json:"host"`
	// Note is the reviewer's note on a decided request.
	Note string `json:"note,omitempty"`
}

// filingJSON is the body of POST /v1/access-requests.
type filingJSON struct {
	Host     string   `json:"host"`
	Ports    []int    `json:"ports,omitempty"`
	Methods  []string `json:"methods,omitempty"`
	Paths    []string `json:"paths,omitempty"`
	Reason   string   `json:"reason"`
	Incident string   `json:"incident,omitempty"`
}

// maxFilingBody bounds a filing's body.
const maxFilingBody = 16 << 10

// isInternal reports whether host (normalised or not) names InternalHost.
func isInternal(host string) bool {
	h, _ := splitHostPortDefault(host, 0)
	n, err := rules.NormalizeHost(h)
	return err == nil && n == InternalHost
}

// internalTLS answers CONNECT sluice.internal:443: TLS with a leaf from the
// tenant CA, then the internal handler, one request after another.
func (g *Gateway) internalTLS(w http.ResponseWriter, r *http.Request, id rules.Identity, port int) {
	if g.Leaf == nil || port != 443 {
		g.refuse(w, r, refusal{id: id, status: http.StatusBadRequest, reason: ReasonNotProxyRequest, host: InternalHost, port: port,
			msg: "use " + FilingURL})
		return
	}
	g.serveTLS(w, r, id, InternalHost, port, "", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		g.internal(w, req, id)
	}))
}

// internal serves a request to InternalHost for the identity of its proxy
// credentials.
func (g *Gateway) internal(w http.ResponseWriter, r *http.Request, id rules.Identity) {
	path := r.URL.Path
	switch {
	case path == "/v1/access-requests" && r.Method == http.MethodPost:
		g.fileRequest(w, r, id)
	case strings.HasPrefix(path, "/v1/access-requests/") && r.Method == http.MethodGet:
		if g.Desk == nil {
			internalError(w, http.StatusServiceUnavailable, "this gateway takes no access requests")
			return
		}
		x, err := g.Desk.Status(r.Context(), id, strings.TrimPrefix(path, "/v1/access-requests/"))
		g.internalAnswer(w, http.StatusOK, x, err)
	default:
		internalError(w, http.StatusNotFound, "POST "+FilingURL+" files an access request; GET it/ID shows one")
	}
}

func (g *Gateway) fileRequest(w http.ResponseWriter, r *http.Request, id rules.Identity) {
	if g.Desk == nil {
		internalError(w, http.StatusServiceUnavailable, "this gateway takes no access requests")
		return
	}
	// What a sandbox sends is scanned like any request: a reason that
	// carries a secret is refused, not stored.
	r, hold, ok := g.admitBody(w, r, id, InternalHost, 80)
	if !ok {
		return
	}
	defer hold.release()
	if _, ok := g.scan(w, r, id, InternalHost, 80); !ok {
		return
	}
	var b filingJSON
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxFilingBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		internalError(w, http.StatusBadRequest, "body: one JSON object with host, ports, methods, paths, reason (and incident): "+err.Error())
		return
	}
	x, err := g.Desk.File(r.Context(), Filing{Who: id, Host: strings.TrimSpace(b.Host), Ports: b.Ports, Methods: b.Methods,
		Paths: b.Paths, Reason: b.Reason, Incident: b.Incident})
	if err == nil {
		g.logger().Info("access request filed", logTenant, id.Tenant, logClass, id.Class, "run", id.Run, "request", x.ID, logHost, x.Host)
		w.Header().Set("Location", FilingURL+"/"+x.ID)
	}
	g.internalAnswer(w, http.StatusCreated, x, err)
}

func (g *Gateway) internalAnswer(w http.ResponseWriter, code int, x Filed, err error) {
	switch {
	case err == nil:
		writeInternalJSON(w, code, x)
	case errors.Is(err, ErrFilingInvalid):
		internalError(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, ErrFilingLimited):
		w.Header().Set("Retry-After", "60")
		internalError(w, http.StatusTooManyRequests, err.Error())
	case errors.Is(err, ErrFilingNotFound):
		internalError(w, http.StatusNotFound, ErrFilingNotFound.Error())
	default:
		g.logger().Error("access request not filed", logErr, err)
		internalError(w, http.StatusServiceUnavailable, "the request could not be filed; retry shortly")
	}
}

func internalError(w http.ResponseWriter, code int, msg string) {
	writeInternalJSON(w, code, struct {
		Error string `json:"error"`
	}{msg})
}

func writeInternalJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
