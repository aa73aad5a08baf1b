package dashboard

import (
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/sluice-egress/sluice/incident"
)

// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/), only the parts
// an incident fills. Written with encoding/json: martian's har package
// records live traffic through its own proxy and would bring martian in
// for a handful of structs.
type (
	harFile struct {
		Log harLog `json:"log"`
	}
	harLog struct {
		Version string     `json:"version"`
		Creator harCreator `json:"creator"`
		Entries []harEntry `json:"entries"`
		Comment string     `json:"comment,omitempty"`
	}
	harCreator struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	harEntry struct {
		StartedDateTime string      `json:"startedDateTime"`
		Time            int         `json:"time"`
		Request         harRequest  `json:"request"`
		Response        harResponse `json:"response"`
		Cache           struct{}    `json:"cache"`
		Timings         harTimings  `json:"timings"`
		Comment         string      `json:"comment,omitempty"`
		// Sluice's own fields (custom fields start with "_").
		Sluice harSluice `json:"_sluice"`
	}
	harNV struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	harRequest struct {
		Method      string       `json:"method"`
		URL         string       `json:"url"`
		HTTPVersion string       `json:"httpVersion"`
		Cookies     []harNV      `json:"cookies"`
		Headers     []harNV      `json:"headers"`
		QueryString []harNV      `json:"queryString"`
		PostData    *harPostData `json:"postData,omitempty"`
		HeadersSize int          `json:"headersSize"`
		BodySize    int          `json:"bodySize"`
	}
	harPostData struct {
		MimeType string `json:"mimeType"`
		Text     string `json:"text"`
		Comment  string `json:"comment,omitempty"`
	}
	harResponse struct {
		Status      int        `json:"status"`
		StatusText  string     `json:"statusText"`
		HTTPVersion string     `json:"httpVersion"`
		Cookies     []harNV    `json:"cookies"`
		Headers     []harNV    `json:"headers"`
		Content     harContent `json:"content"`
		RedirectURL string     `json:"redirectURL"`
		HeadersSize int        `json:"headersSize"`
		BodySize    int        `json:"bodySize"`
	}
	harContent struct {
		Size     int    `json:"size"`
		MimeType string `json:"mimeType"`
		Text     string `json:"text,omitempty"`
	}
	harTimings struct {
		Send    int `json:"send"`
		Wait    int `json:"wait"`
		Receive int `json:"receive"`
	}
	harSluice struct {
		Incident    string `json:"incident"`
		Tenant      string `json:"tenant,omitempty"`
		Class       string `json:"class,omitempty"`
		Run         string `json:"run,omitempty"`
		Kind        string `json:"kind,omitempty"`
		Reason      string `json:"reason,omitempty"`
		Action      string `json:"action,omitempty"`
		Rule        string `json:"rule,omitempty"`
		Where       string `json:"where,omitempty"`
		Decoding    string `json:"decoding,omitempty"`
		Snippet     string `json:"snippet,omitempty"`
		Fingerprint string `json:"fingerprint,omitempty"`
		Triage      string `json:"triage,omitempty"`
	}
)

// IncidentHAR returns the incident's request as a HAR 1.2 file: method,
// URL (without query: the store never keeps it), the redacted evidence,
// and, when it was refused, the gateway's 403 answer. Nothing in it is a
// secret: the incident holds none.
func IncidentHAR(in incident.Incident) ([]byte, error) {
	u := url.URL{Scheme: schemeFor(in.Port), Host: in.Host, Path: in.Path}
	if in.Port != 0 && in.Port != 443 && in.Port != 80 {
		u.Host = in.Host + ":" + strconv.Itoa(in.Port)
	}
	if u.Path == "" {
		u.Path = "/"
	}
	method := in.Method
	if method == "" {
		method = "CONNECT"
	}
	e := harEntry{
		StartedDateTime: in.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		Request: harRequest{Method: method, URL: u.String(), HTTPVersion: "HTTP/1.1",
			Cookies: []harNV{}, Headers: []harNV{}, QueryString: []harNV{}, HeadersSize: -1, BodySize: -1},
		Response: harResponse{HTTPVersion: "HTTP/1.1", Cookies: []harNV{}, Headers: []harNV{},
			Content: harContent{MimeType: "text/plain"}, HeadersSize: -1, BodySize: -1},
		Comment: "Sluice incident " + in.ID + ": redacted evidence only; headers and body were not kept.",
		Sluice: harSluice{Incident: in.ID, Tenant: in.Tenant, Class: in.Class, Run: in.Run, Kind: in.Kind,
			Reason: in.Reason, Action: in.Action, Rule: in.Rule, Where: in.Where, Decoding: in.Decoding,
			Snippet: in.Snippet, Fingerprint: in.Fingerprint, Triage: in.Triage.State},
	}
	if in.Snippet != "" {
		e.Request.PostData = &harPostData{MimeType: "text/plain", Text: in.Snippet,
			Comment: "redacted evidence found at " + in.Where}
	}
	if in.Action == "block" {
		e.Response.Status, e.Response.StatusText = 403, "Forbidden"
		e.Response.Headers = []harNV{{"Sluice-Reason", in.Reason}, {"Sluice-Incident", in.ID}}
		e.Response.Content.Text = "sluice: " + in.Reason + "\n"
		e.Response.Content.Size = len(e.Response.Content.Text)
	}
	return json.MarshalIndent(harFile{Log: harLog{Version: "1.2", Creator: harCreator{Name: "sluice", Version: "1"},
		Entries: []harEntry{e}}}, "", "  ")
}
