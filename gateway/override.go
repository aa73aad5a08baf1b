package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	"github.com/sluice-egress/sluice/rules"
)

// overrideHeaders name a method that many frameworks (Express's
// method-override, ASP.NET Core, Laravel and Symfony, gorilla/handlers,
// Google's APIs) route on instead of the request line's: POST with
// X-HTTP-Method-Override: DELETE is a DELETE there.
// They are kept in canonical form, looked up in the header map directly:
// Header.Values canonicalises its key on each of every request's calls.
var overrideHeaders = []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override"}

// pathOverrideHeaders name a path or host other than the request line's
// that some upstreams route or authorise on. No client has a reason to
// send them: they are what a reverse proxy in front of the application
// sets, and the gateway is that proxy. They are removed, not decided:
//   - X-Original-URL, X-Rewrite-URL: Symfony (before 5), Zend/Laminas and
//     IIS URL Rewrite route on them (the classic path-ACL bypass);
//   - X-Original-URI, X-Forwarded-Uri: what nginx auth_request and
//     Traefik/Caddy forward-auth hand an authorisation service;
//   - X-Forwarded-Prefix, X-Forwarded-Path: Spring's ForwardedHeaderFilter
//     and ASP.NET's path base prepend them to the path the app sees;
//   - X-Forwarded-Host, X-Host, X-Forwarded-Server, Forwarded: the host an
//     app (Symfony, Rails, Spring, Django with USE_X_FORWARDED_HOST) takes
//     for its own (ReverseProxy's Rewrite drops the standard ones too).
var pathOverrideHeaders = []string{"X-Original-URL", "X-Rewrite-URL", "X-Original-URI", "X-Forwarded-Uri",
	"X-Forwarded-Prefix", "X-Forwarded-Path", "X-Forwarded-Host", "X-Host", "X-Forwarded-Server", "Forwarded"}

// strippedHeaders are removed from every request forwarded: the
// gateway's own credentials and probe, and pathOverrideHeaders. Their
// canonical keys, computed once: Header.Del canonicalises its key on
// every call, ten calls a request.
var strippedHeaders = func() (keys []string) {
	for _, h := range append([]string{"Proxy-Authorization", "Proxy-Connection", ProbeHeader}, pathOverrideHeaders...) {
		keys = append(keys, http.CanonicalHeaderKey(h))
	}
	return keys
}()

// unreadableMethod is the method a request is read as overriding with
// when its body could not be read for _method: no entry allows it, so the
// request is refused wherever an entry limits methods.
const unreadableMethod = "_METHOD-UNREADABLE"

// maxFormPeek is how much of a body is read, at least, to find a _method
// field (Gateway.ScanBodyLimit when larger: the scanner holds that much
// anyway). A longer body, or a malformed one, is refused where an entry
// limits methods, since an override could not be ruled out.
const maxFormPeek = 1 << 20

// methodOverrides returns the methods r names besides its own, upper-cased:
// override headers and _method in the query and, where the policy limits
// the methods of q's entry, _method in the body. A body read for it is put
// back for the forwarding; where methods are not limited it is not read at
// all, so that large uploads are not held to the peek limit.
func (g *Gateway) methodOverrides(r *http.Request, q rules.Query) []string {
	out := headerOverrides(r)
	if r.Body == nil || r.Body == http.NoBody {
		return out
	}
	probe := q
	probe.Method = unreadableMethod
	if g.Policy.Decide(probe).Action == rules.Allow {
		return out // any method goes: no override can matter
	}
	if m, ok := bodyOverrides(r, max(maxFormPeek, g.rawBodyLimit())); ok {
		return append(out, m...)
	}
	return append(out, unreadableMethod)
}

// headerOverrides returns the methods r's override headers and query name.
func headerOverrides(r *http.Request) []string {
	var out []string
	for _, h := range overrideHeaders {
		for _, v := range r.Header[h] {
			for m := range strings.SplitSeq(v, ",") {
				out = append(out, strings.ToUpper(strings.TrimSpace(m)))
			}
		}
	}
	if r.URL != nil && r.URL.RawQuery != "" {
		// What parses of a malformed query is read too.
		vals, _ := url.ParseQuery(r.URL.RawQuery)
		out = append(out, methodFields(vals)...)
	}
	return out
}

// methodFields returns the _method values of a parsed form, keys read as
// PHP reads them (phpName).
func methodFields(vals url.Values) []string {
	var out []string
	for k, vs := range vals {
		if phpName(k) != "_method" {
			continue
		}
		for _, m := range vs {
			out = append(out, strings.ToUpper(strings.TrimSpace(m)))
		}
	}
	return out
}

// phpName is a field name as PHP registers it, and so as Laravel and
// Symfony see it: leading spaces dropped, spaces and dots turned into
// underscores, and an opening bracket that is never closed too, so that
// ".method" and "[method" are "_method" there.
func phpName(k string) string {
	k = strings.TrimLeft(k, " ")
	if i := strings.IndexByte(k, '['); i >= 0 && !strings.Contains(k[i:], "]") {
		k = k[:i] + "_" + k[i+1:]
	}
	return strings.NewReplacer(" ", "_", ".", "_").Replace(k)
}

// bodyOverrides reads the _method fields of r's body as the frameworks that
// honour one read it: a urlencoded form, or a POST without a content type
// (Rack reads it as a form); a multipart form (Rails, Laravel, Spring,
// gorilla); a JSON object's top-level keys (Laravel, Phoenix, Express with
// a body getter). Other types are not read. It restores the body. ok is
// false when the body could not be read whole within limit, or not parsed
// as its type says (a framework might parse it differently).
func bodyOverrides(r *http.Request, limit int64) (methods []string, ok bool) {
	raw := r.Header.Get("Content-Type")
	ct, params, err := mime.ParseMediaType(raw)
	var parse func([]byte) ([]string, bool)
	switch {
	case strings.TrimSpace(raw) == "" || ct == "application/x-www-form-urlencoded":
		parse = formFields
	case ct == "multipart/form-data":
		boundary := params["boundary"]
		if boundary == "" {
			return nil, false
		}
		parse = func(b []byte) ([]string, bool) { return multipartFields(b, boundary) }
	case ct == "application/json" || strings.HasSuffix(ct, "+json") || strings.HasSuffix(ct, "/json"):
		parse = jsonFields
	case err != nil && ct == "":
		return nil, false // a content type no one can read: no telling what a framework makes of it
	default:
		return nil, true
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}
	if err != nil || int64(len(b)) > limit {
		return nil, false
	}
	return parse(b)
}

func formFields(b []byte) ([]string, bool) {
	vals, err := url.ParseQuery(string(b))
	if err != nil {
		return nil, false
	}
	return methodFields(vals), true
}

// maxMethodField bounds what is read of a _method part's value.
const maxMethodField = 256

func multipartFields(b []byte, boundary string) ([]string, bool) {
	mr := multipart.NewReader(bytes.NewReader(b), boundary)
	var out []string
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return out, true
		}
		if err != nil {
			return nil, false
		}
		if p.FileName() == "" && phpName(p.FormName()) == "_method" {
			v, err := io.ReadAll(io.LimitReader(p, maxMethodField))
			if err != nil {
				return nil, false
			}
			out = append(out, strings.ToUpper(strings.TrimSpace(string(v))))
		}
	}
}

// jsonFields returns the string values of every top-level "_method" key
// (each of them: parsers disagree on which duplicate wins). A body that is
// not an object names no method; one that is not JSON is not ok.
func jsonFields(b []byte) ([]string, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, false
	}
	if d, isDelim := tok.(json.Delim); !isDelim || d != '{' {
		return nil, true
	}
	var out []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		var s string
		if key == "_method" && json.Unmarshal(v, &s) == nil {
			out = append(out, strings.ToUpper(strings.TrimSpace(s)))
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	return out, true
}
