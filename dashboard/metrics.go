package dashboard

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ContentSecurityPolicy is sent with every answer: the dashboard shows
// attacker-controlled text, so it loads nothing from anywhere but itself,
// runs only its own script files (the live review queue: no inline script,
// no eval, nothing remote), connects to itself only, and cannot be framed.
const ContentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// NewRouter returns the admin listener's handler: /healthz (the process is
// alive), /readyz and /metrics, and, when o.Store is set, the dashboard
// pages and the JSON API under /api, all behind Auth.Middleware.
func NewRouter(o Options) *chi.Mux {
	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			h := w.Header()
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Cache-Control", "no-store")
			h.Set("Content-Security-Policy", ContentSecurityPolicy)
			h.Set("Referrer-Policy", "no-referrer")
			h.Set("X-Frame-Options", "DENY")
			h.Set("Cross-Origin-Opener-Policy", "same-origin")
			h.Set("Cross-Origin-Resource-Policy", "same-origin")
			next.ServeHTTP(w, req)
		})
	})
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	r.Get("/readyz", func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if o.Ready != nil {
			ctx, cancel := context.WithTimeout(req.Context(), 2*time.Second)
			defer cancel()
			if err := o.Ready(ctx); err != nil {
				logger := o.Logger
				if logger == nil {
					logger = slog.Default()
				}
				logger.Warn("not ready", "err", err)
				w.WriteHeader(http.StatusServiceUnavailable)
				w.Write([]byte("not ready: " + err.Error() + "\n"))
				return
			}
		}
		w.Write([]byte("ready\n"))
	})
	if o.Store != nil {
		mountDashboard(r, o)
	}
	if o.Metrics != nil {
		r.Method(http.MethodGet, "/metrics", promhttp.HandlerFor(o.Metrics.Registry, promhttp.HandlerOpts{
			Registry: o.Metrics.Registry, // counts its own scrape errors
		}))
	}
	return r
}

// Label values that Metrics accepts. Anything else (a host, a path, a
// token, a typo that would explode the series count) is counted under
// OtherLabel: no secret, host or path ever becomes a label.
var labelRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// OtherLabel replaces a label value that is not a short lower-case name.
const OtherLabel = "other"

// NoTenant is the tenant label of events from unauthenticated clients.
const NoTenant = "none"

func label(v string) string {
	if labelRE.MatchString(v) {
		return v
	}
	return OtherLabel
}

// MetricsOptions are the gauges read at scrape time. Nil funcs leave their
// gauge out.
type MetricsOptions struct {
	// OpenTunnels is the number of CONNECT tunnels open now.
	OpenTunnels func() int
	// ParkedTunnels is how many of them are idle HTTP/1.1 tunnels parked
	// without net/http's buffers. nil: no gauge.
	ParkedTunnels func() int
	// QueueDepth is the number of incidents waiting for the store writer.
	QueueDepth func() int
	// TextsNotRescanned counts the body texts the scanner found clean before
	// and did not scan again (a conversation's history). nil: no counter.
	TextsNotRescanned func() uint64
}

// Metrics holds Sluice's Prometheus collectors on a registry of their own
// (served on /metrics). Its methods match the hooks of the parts they
// observe, so cmd wires them without glue: ObserveLeaf is ca.Store.OnLeaf,
// ObserveBatch is store.Writer.OnBatch.
type Metrics struct {
	// Registry holds every collector below plus the Go and process collectors.
	Registry *prometheus.Registry

	// Decisions counts refusals, blocks and flagged requests (events) by
	// tenant, reason and action. Allowed requests are not events.
	Decisions *prometheus.CounterVec
	// Findings counts scanner findings by rule and action.
	Findings *prometheus.CounterVec
	// UpstreamBytes counts bytes on upstream connections, direction
	// "sent" (egress) or "received".
	UpstreamBytes *prometheus.CounterVec
	// ScanDuration is the time the scanner spends on one request; the
	// scanner's caller observes it (ObserveScan).
	ScanDuration prometheus.Histogram
	// LeafCache counts leaf certificate lookups by result "hit" or "miss".
	LeafCache *prometheus.CounterVec
	// LeafIssue is the time a leaf cache miss took (minting the certificate).
	LeafIssue prometheus.Histogram
	// StoreBatch is the time one store transaction (a batch of incidents) took.
	StoreBatch prometheus.Histogram
	// StoreBatchSize is the number of incidents per batch.
	StoreBatchSize prometheus.Histogram
	// StoreErrors counts failed store batches.
	StoreErrors prometheus.Counter
	// PolicyReloads counts policy reloads by result "ok" or "error".
	PolicyReloads *prometheus.CounterVec
	// Alerts counts incidents handed to alert webhooks by webhook and result
	// (AlertResult); it has no series until alerts are configured.
	Alerts *prometheus.CounterVec

	sent, received prometheus.Counter
}

// NewMetrics creates and registers the collectors.
func NewMetrics(o MetricsOptions) *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	m.Decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_decisions_total",
		Help: "Refusals, blocks and flagged requests by tenant, reason and action (allowed requests are not counted).",
	}, []string{"tenant", "reason", "action"})
	m.Findings = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_findings_total",
		Help: "Scanner findings by detection rule and action.",
	}, []string{"rule", "action"})
	m.UpstreamBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_upstream_bytes_total",
		Help: "Bytes on upstream connections: sent (egress) or received.",
	}, []string{"direction"})
	m.ScanDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "sluice_scan_duration_seconds",
		Help:    "Time the scanner spent on one request.",
		Buckets: prometheus.ExponentialBuckets(50e-6, 4, 10), // 50µs … 13s
	})
	m.LeafCache = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_leaf_cache_total",
		Help: "Leaf certificate lookups by result (hit or miss).",
	}, []string{"result"})
	m.LeafIssue = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "sluice_leaf_issue_seconds",
		Help:    "Time to mint a leaf certificate on a cache miss.",
		Buckets: prometheus.ExponentialBuckets(50e-6, 4, 8), // 50µs … 0.8s
	})
	m.StoreBatch = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "sluice_store_batch_seconds",
		Help:    "Time one store transaction (a batch of incidents) took.",
		Buckets: prometheus.ExponentialBuckets(100e-6, 4, 9), // 100µs … 6.5s
	})
	m.StoreBatchSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "sluice_store_batch_incidents",
		Help:    "Incidents per store transaction.",
		Buckets: prometheus.ExponentialBuckets(1, 4, 6), // 1 … 1024
	})
	m.StoreErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "sluice_store_batch_errors_total",
		Help: "Store transactions that failed.",
	})
	m.PolicyReloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_policy_reloads_total",
		Help: "Policy reloads by result (ok or error).",
	}, []string{"result"})
	m.Alerts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_alerts_total",
		Help: "Incidents handed to alert webhooks, by webhook and result (sent, failed, rate_limited, queue_full).",
	}, []string{"webhook", "result"})
	m.Registry.MustRegister(m.Decisions, m.Findings, m.UpstreamBytes, m.ScanDuration, m.LeafCache, m.LeafIssue,
		m.StoreBatch, m.StoreBatchSize, m.StoreErrors, m.PolicyReloads, m.Alerts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.OpenTunnels != nil {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sluice_tunnels_open",
			Help: "CONNECT tunnels open now.",
		}, func() float64 { return float64(o.OpenTunnels()) }))
	}
	if o.ParkedTunnels != nil {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sluice_tunnels_parked",
			Help: "Idle HTTP/1.1 tunnels parked now (open, their buffers given back).",
		}, func() float64 { return float64(o.ParkedTunnels()) }))
	}
	if o.TextsNotRescanned != nil {
		m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sluice_scan_texts_not_rescanned_total",
			Help: "Body texts found clean before and not scanned again (scanning.clean_cache_entries).",
		}, func() float64 { return float64(o.TextsNotRescanned()) }))
	}
	if o.QueueDepth != nil {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sluice_store_queue_depth",
			Help: "Incidents waiting for the store writer.",
		}, func() float64 { return float64(o.QueueDepth()) }))
	}
	m.sent = m.UpstreamBytes.WithLabelValues("sent")
	m.received = m.UpstreamBytes.WithLabelValues("received")
	// Series that exist from the start, so that rate() sees the first increase.
	for _, r := range []string{"hit", "miss"} {
		m.LeafCache.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "error"} {
		m.PolicyReloads.WithLabelValues(r)
	}
	return m
}

// Event counts one gateway event: a decision for every event and, when
// rule is set, a finding. Values that are not short lower-case names are
// counted as OtherLabel; tenant "" is NoTenant.
func (m *Metrics) Event(tenant, reason, action, rule string) {
	if tenant == "" {
		tenant = NoTenant
	}
	m.Decisions.WithLabelValues(label(tenant), label(reason), label(action)).Inc()
	if rule != "" {
		m.Findings.WithLabelValues(label(rule), label(action)).Inc()
	}
}

// AddSent and AddReceived count upstream bytes.
func (m *Metrics) AddSent(n int)     { m.sent.Add(float64(n)) }
func (m *Metrics) AddReceived(n int) { m.received.Add(float64(n)) }

// ObserveScan records the time the scanner took on one request.
func (m *Metrics) ObserveScan(d time.Duration) { m.ScanDuration.Observe(d.Seconds()) }

// ObserveLeaf records a leaf lookup; its signature is ca.Store.OnLeaf's.
func (m *Metrics) ObserveLeaf(_ string, hit bool, d time.Duration) {
	if hit {
		m.LeafCache.WithLabelValues("hit").Inc()
		return
	}
	m.LeafCache.WithLabelValues("miss").Inc()
	m.LeafIssue.Observe(d.Seconds())
}

// ObserveBatch records a store batch; its signature is store.Writer.OnBatch's.
func (m *Metrics) ObserveBatch(n int, d time.Duration, err error) {
	m.StoreBatch.Observe(d.Seconds())
	m.StoreBatchSize.Observe(float64(n))
	if err != nil {
		m.StoreErrors.Inc()
	}
}

// PolicyReload records a policy reload and its result; its signature is
// reload.Watcher's OnResult.
func (m *Metrics) PolicyReload(ok bool) {
	if ok {
		m.PolicyReloads.WithLabelValues("ok").Inc()
		return
	}
	m.PolicyReloads.WithLabelValues("error").Inc()
}

// AlertResult counts one alert's result; its signature is alert.Sink's OnResult.
func (m *Metrics) AlertResult(webhook, result string) {
	m.Alerts.WithLabelValues(webhook, result).Inc()
}
