// Package alert sends incidents to webhooks (generic JSON or Slack-shaped) off the request path, with a bounded queue, retries and a rate limit.
package alert

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sluice-egress/sluice/incident"
)

// Format is a webhook's payload shape.
type Format string

const (
	// FormatJSON posts {"type": "sluice.incident", "incident": {...}, "suppressed": n, "link": "..."}.
	FormatJSON Format = "json"
	// FormatSlack posts {"text": "..."}, which Slack incoming webhooks (and Mattermost,
	// Rocket.Chat, Teams' Slack-compatible endpoints) accept.
	FormatSlack Format = "slack"
)

// Actions an incident may carry, weakest first; Webhook.MinAction picks a threshold.
var actionRank = map[string]int{"alert": 1, "redact": 2, "block": 3}

// Results counted through Sink.OnResult.
const (
	ResultSent        = "sent"         // delivered (2xx)
	ResultFailed      = "failed"       // given up after the last attempt, or refused with a 4xx
	ResultRateLimited = "rate_limited" // coalesced into the next alert by the rate limit
	ResultQueueFull   = "queue_full"   // dropped: the webhook's queue was full
)

// incidentJSON is what an alert tells about an incident: its redacted fields only. It
// has no snippet, client address, decoding or triage, so that an alert (which leaves for
// a chat service) carries no secret and no evidence beyond what identifies the incident.
// It names the fields it keeps, so that a field added to the incident stays out of
// alerts until chosen.
type incidentJSON struct {
	ID          string    `json:"id"`
	Time        time.Time `json:"time"`
	Tenant      string    `json:"tenant"`
	Class       string    `json:"class,omitempty"`
	Run         string    `json:"run,omitempty"`
	Kind        string    `json:"kind"`
	Reason      string    `json:"reason"`
	Action      string    `json:"action"`
	Host        string    `json:"host"`
	Port        int       `json:"port,omitempty"`
	Method      string    `json:"method,omitempty"`
	Path        string    `json:"path,omitempty"`
	Rule        string    `json:"rule,omitempty"`
	Where       string    `json:"where,omitempty"`
	Fingerprint string    `json:"fingerprint,omitempty"`
}

// Webhook is one destination.
type Webhook struct {
	// Name labels the webhook in logs and metrics ("webhook-0" when empty). The URL is
	// never logged: it often holds a secret token.
	Name string
	// URL receives a POST per alert.
	URL string
	// Format of the payload; "" is FormatJSON.
	Format Format
	// MinAction is the weakest action alerted: "block" (the default when ""), "redact"
	// or "alert".
	MinAction string
	// PerMinute bounds the alerts sent per minute; beyond it, incidents are counted and
	// coalesced into the next alert ("and N more"). Zero: 30.
	PerMinute int
}

// Sink delivers incidents to its webhooks. Alert never blocks; each webhook has its own
// queue and worker, so a slow webhook delays nobody else. Set the fields before the
// first Alert; Close drains.
type Sink struct {
	Webhooks []Webhook
	// Client posts the alerts. Nil: a client with a 10s timeout that ignores the
	// environment's proxies (alerts are sent directly).
	Client *http.Client
	// QueueSize bounds each webhook's waiting incidents. Zero: 256.
	QueueSize int
	// MaxAttempts bounds the tries per alert (5xx, 429 and network errors are retried;
	// other 4xx are not). Zero: 5.
	MaxAttempts int
	// Backoff is the wait before the first retry; it doubles up to 30s. Zero: 1s.
	Backoff time.Duration
	// DashboardURL, when set, makes each alert link to the incident
	// (DashboardURL + "/incidents/" + id).
	DashboardURL string
	// OnResult is called with the webhook's name and a Result constant for every
	// incident (for metrics). Nil: nothing.
	OnResult func(webhook, result string)
	// Logger nil: slog.Default().
	Logger *slog.Logger

	once    sync.Once
	mu      sync.RWMutex // write-held by Close
	closed  bool
	workers []*worker
	wg      sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
}

type worker struct {
	s      *Sink
	hook   Webhook
	name   string
	min    int
	queue  chan incident.Incident
	tokens float64
	last   time.Time
	// suppressed counts incidents coalesced by the rate limit since the last alert sent.
	suppressed int
}

func (s *Sink) init() {
	s.once.Do(func() {
		s.ctx, s.cancel = context.WithCancel(context.Background())
		n := s.QueueSize
		if n <= 0 {
			n = 256
		}
		for i, h := range s.Webhooks {
			w := &worker{s: s, hook: h, name: h.Name, queue: make(chan incident.Incident, n)}
			if w.name == "" {
				w.name = fmt.Sprintf("webhook-%d", i)
			}
			w.min = actionRank[h.MinAction]
			if w.min == 0 {
				w.min = actionRank["block"]
			}
			w.tokens = float64(w.perMinute())
			s.workers = append(s.workers, w)
			s.wg.Go(w.run)
		}
	})
}

func (s *Sink) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Sink) client() *http.Client {
	if s.Client != nil {
		return s.Client
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
}

func (s *Sink) result(webhook, r string) {
	if s.OnResult != nil {
		s.OnResult(webhook, r)
	}
}

// Alert queues in for every webhook whose MinAction it reaches. It never blocks: a full
// queue drops the incident (counted as ResultQueueFull). After Close it does nothing.
func (s *Sink) Alert(in incident.Incident) {
	s.init()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return
	}
	for _, w := range s.workers {
		if actionRank[in.Action] < w.min {
			continue
		}
		select {
		case w.queue <- in:
		default:
			s.result(w.name, ResultQueueFull)
			s.logger().Warn("alert dropped: queue full", "webhook", w.name, "incident", in.ID)
		}
	}
}

// Close stops accepting alerts and delivers what is queued until ctx ends; then
// pending retries are abandoned.
func (s *Sink) Close(ctx context.Context) error {
	s.init()
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		for _, w := range s.workers {
			close(w.queue)
		}
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.cancel()
		return nil
	case <-ctx.Done():
		s.cancel()
		<-done
		return fmt.Errorf("alert: close: %w", ctx.Err())
	}
}

func (w *worker) perMinute() int {
	if w.hook.PerMinute > 0 {
		return w.hook.PerMinute
	}
	return 30
}

// take reports whether the token bucket (PerMinute per minute, bursts of PerMinute)
// lets one alert go now.
func (w *worker) take(now time.Time) bool {
	pm := float64(w.perMinute())
	if !w.last.IsZero() {
		w.tokens = min(pm, w.tokens+now.Sub(w.last).Minutes()*pm)
	}
	w.last = now
	if w.tokens >= 1 {
		w.tokens--
		return true
	}
	return false
}

// run delivers the queue. Incidents over the rate are coalesced: the next alert sent
// says how many were suppressed; when the queue goes quiet with some suppressed, a
// summary is sent as soon as the rate allows.
func (w *worker) run() {
	tick := time.NewTicker(time.Minute / time.Duration(w.perMinute()))
	defer tick.Stop()
	for {
		select {
		case in, ok := <-w.queue:
			if !ok {
				if w.suppressed > 0 {
					w.send(nil) // a last summary, rate or not: nothing follows it
				}
				return
			}
			if !w.take(time.Now()) {
				w.suppressed++
				w.s.result(w.name, ResultRateLimited)
				continue
			}
			w.send(&in)
		case <-tick.C:
			if w.suppressed > 0 && w.take(time.Now()) {
				w.send(nil)
			}
		}
	}
}

// send delivers one alert (in nil: a summary of the suppressed ones) with retries.
func (w *worker) send(in *incident.Incident) {
	body, err := w.payload(in, w.suppressed)
	if err != nil {
		w.s.logger().Error("alert: payload", "webhook", w.name, "err", err)
		w.s.result(w.name, ResultFailed)
		return
	}
	w.suppressed = 0
	attempts := w.s.MaxAttempts
	if attempts <= 0 {
		attempts = 5
	}
	wait := w.s.Backoff
	if wait <= 0 {
		wait = time.Second
	}
	id := ""
	if in != nil {
		id = in.ID
	}
	for try := 1; ; try++ {
		retry, err := w.post(body)
		if err == nil {
			w.s.result(w.name, ResultSent)
			return
		}
		if !retry || try >= attempts {
			w.s.logger().Error("alert not delivered", "webhook", w.name, "incident", id, "attempts", try, "err", err)
			w.s.result(w.name, ResultFailed)
			return
		}
		w.s.logger().Warn("alert: retrying", "webhook", w.name, "incident", id, "attempt", try, "err", err)
		select {
		case <-time.After(wait):
		case <-w.s.ctx.Done():
			w.s.result(w.name, ResultFailed)
			return
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// errStatus is a webhook's non-2xx answer.
type errStatus int

func (e errStatus) Error() string { return fmt.Sprintf("webhook answered %d", int(e)) }

// post sends one attempt. Its errors never hold the URL (which may hold a secret).
func (w *worker) post(body []byte) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(w.s.ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.hook.URL, bytes.NewReader(body))
	if err != nil {
		return false, errors.New("bad webhook URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sluice-alert")
	resp, err := w.s.client().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // *url.Error prints the URL
		}
		return true, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return true, errStatus(resp.StatusCode)
	}
	return false, errStatus(resp.StatusCode)
}

// jsonPayload is FormatJSON's body.
type jsonPayload struct {
	Type       string        `json:"type"`
	Incident   *incidentJSON `json:"incident,omitempty"`
	Suppressed int           `json:"suppressed"`
	Link       string        `json:"link,omitempty"`
	Text       string        `json:"text"`
}

func (w *worker) payload(in *incident.Incident, suppressed int) ([]byte, error) {
	var c *incidentJSON
	link := ""
	if in != nil {
		cp := clean(*in)
		c = &cp
		if w.s.DashboardURL != "" && c.ID != "" {
			link = strings.TrimRight(w.s.DashboardURL, "/") + "/incidents/" + url.PathEscape(c.ID)
		}
	}
	text := summary(c, suppressed, link)
	if w.hook.Format == FormatSlack {
		return json.Marshal(struct {
			Text string `json:"text"`
		}{slackEscape(text)})
	}
	typ := "sluice.incident"
	if c == nil {
		typ = "sluice.suppressed"
	}
	return json.Marshal(jsonPayload{Type: typ, Incident: c, Suppressed: suppressed, Link: link, Text: text})
}

// maxField bounds each text field of an alert: 200 bytes and the cut mark.
const maxField = 200 + len("…")

// clean is what an alert keeps of in: the fields of incidentJSON, as valid UTF-8,
// each bounded, and the path without anything after '?' or '#'.
func clean(in incident.Incident) incidentJSON {
	c := incidentJSON{ID: in.ID, Time: in.Time, Tenant: in.Tenant, Class: in.Class, Run: in.Run, Kind: in.Kind,
		Reason: in.Reason, Action: in.Action, Host: in.Host, Port: in.Port, Method: in.Method,
		Path: incident.WithoutQuery(in.Path), Rule: in.Rule, Where: in.Where, Fingerprint: in.Fingerprint}
	for _, f := range []*string{&c.ID, &c.Tenant, &c.Class, &c.Run, &c.Kind, &c.Reason, &c.Action,
		&c.Host, &c.Method, &c.Path, &c.Rule, &c.Where, &c.Fingerprint} {
		*f = incident.Clip(strings.ToValidUTF8(*f, "?"), maxField)
	}
	return c
}

// summary is the alert's one-paragraph text.
func summary(in *incidentJSON, suppressed int, link string) string {
	var b strings.Builder
	if in != nil {
		fmt.Fprintf(&b, "sluice %s: %s", verb(in.Action), in.Reason)
		if in.Rule != "" {
			fmt.Fprintf(&b, " (rule %s)", in.Rule)
		}
		fmt.Fprintf(&b, " — tenant %s", in.Tenant)
		if in.Class != "" {
			fmt.Fprintf(&b, ", class %s", in.Class)
		}
		if in.Run != "" {
			fmt.Fprintf(&b, ", run %s", in.Run)
		}
		fmt.Fprintf(&b, ": %s", strings.TrimSpace(in.Method+" "+in.Host))
		if in.Port != 0 && in.Port != 443 {
			fmt.Fprintf(&b, ":%d", in.Port)
		}
		b.WriteString(in.Path)
		fmt.Fprintf(&b, " [%s]", in.ID)
		if link != "" {
			b.WriteString(" " + link)
		}
	}
	if suppressed > 0 {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "(%d more incident(s) suppressed by the alert rate limit)", suppressed)
	}
	return b.String()
}

func verb(action string) string {
	switch action {
	case "block":
		return "blocked"
	case "redact":
		return "redacted"
	}
	return "flagged"
}

// slackEscape escapes what Slack reads as markup in text: '&', '<' and '>' (so that a
// host or path cannot smuggle a link or an @channel mention into the alert).
func slackEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
