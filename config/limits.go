package config

import (
	"strconv"
	"time"
)

// Limits bound what one client, connection or request may take of the gateway (the
// limits: section). Every key's zero value (absent) is the gateway's default, given with
// each field; a key that is set must lie within the range given there.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's line and headers (slowloris).
	// Default 10s; 1s to 10m.
	ReadHeaderTimeout Duration `yaml:"read_header_timeout"`
	// BodyIdleTimeout is the longest pause between a request body's bytes (or a
	// WebSocket message's). Default 30s; 1s to 1h.
	BodyIdleTimeout Duration `yaml:"body_idle_timeout"`
	// BodyReadTimeout bounds how long the part of a body held for scanning may take to
	// arrive. Default 60s; 1s to 1h.
	BodyReadTimeout Duration `yaml:"body_read_timeout"`
	// KeepaliveIdleTimeout closes a keep-alive client connection idle between requests.
	// Default 2m; 1s to 1h.
	KeepaliveIdleTimeout Duration `yaml:"keepalive_idle_timeout"`
	// TunnelIdleTimeout closes a passthrough tunnel or WebSocket silent both ways.
	// Default 5m; 1s to 24h.
	TunnelIdleTimeout Duration `yaml:"tunnel_idle_timeout"`
	// TunnelMaxLifetime closes any tunnel this long after it opened. Default 24h; 1m
	// to 720h (30 days).
	TunnelMaxLifetime Duration `yaml:"tunnel_max_lifetime"`
	// UpstreamConnectTimeout bounds resolving and dialing an upstream (504 past it).
	// Default 10s; 1s to 5m.
	UpstreamConnectTimeout Duration `yaml:"upstream_connect_timeout"`
	// UpstreamHeaderTimeout bounds the wait for an upstream's response headers (504
	// past it). Default 90s; 1s to 1h.
	UpstreamHeaderTimeout Duration `yaml:"upstream_header_timeout"`
	// MaxHeaderBytes bounds a request's line and headers together (431 past it).
	// Default 64KiB; 8KiB to 1MiB.
	MaxHeaderBytes ByteSize `yaml:"max_header_bytes"`
	// MaxHeaderCount bounds a request's header fields (431 past it). Default 100; 1
	// to 10000.
	MaxHeaderCount int `yaml:"max_header_count"`
	// MaxURLBytes bounds the request target (414 past it). Default 16KiB; 1KiB to 1MiB.
	MaxURLBytes ByteSize `yaml:"max_url_bytes"`
	// MaxConnsPerClient bounds the connections open at once from one client address
	// (503 past it). Default 256; 1 to 1000000.
	MaxConnsPerClient int `yaml:"max_conns_per_client"`
	// MaxConnsPerTenant bounds the connections open at once carrying one tenant's
	// credentials. Default 1024; 1 to 1000000.
	MaxConnsPerTenant int `yaml:"max_conns_per_tenant"`
}

// HTTP2 bounds clients that speak HTTP/2 inside inspected tunnels (the http2: section).
// Zero values are the gateway's defaults, given with each field.
type HTTP2 struct {
	// Disable offers only http/1.1 by ALPN.
	Disable bool `yaml:"disable"`
	// MaxConcurrentStreams is how many streams one client connection may have open.
	// Default 100; 1 to 1000.
	MaxConcurrentStreams int `yaml:"max_concurrent_streams"`
	// MaxHeaderBytes bounds a stream's decoded header list (431 past it). Default
	// 64KiB; 8KiB to 1MiB.
	MaxHeaderBytes ByteSize `yaml:"max_header_bytes"`
	// MaxHeaderTableSize is the HPACK table a client may make the gateway keep per
	// connection. Default 4KiB; 4KiB to 64KiB.
	MaxHeaderTableSize ByteSize `yaml:"max_header_table_size"`
	// MaxReadFrameSize is the largest frame the gateway reads. Default 16KiB (the
	// protocol's minimum); 16KiB to 16MiB-1 (its maximum, 16777215).
	MaxReadFrameSize ByteSize `yaml:"max_read_frame_size"`
	// BodyTimeout is how long one gRPC message may take to arrive once begun.
	// Default 60s; 1s to 1h.
	BodyTimeout Duration `yaml:"body_timeout"`
	// MaxResets is how many streams a connection may cancel in a burst (rapid reset,
	// CVE-2023-44487). Default twice max_concurrent_streams; 1 to 100000.
	MaxResets int `yaml:"max_resets"`
	// ResetWindow is the time over which max_resets is regained. Default 10s; 1s to 1h.
	ResetWindow Duration `yaml:"reset_window"`
}

type durationRange struct {
	key      string
	v        Duration
	min, max time.Duration
}

type intRange struct {
	key      string
	v        int64
	min, max int64
	unit     func(int64) string
}

func (v *validator) limits() {
	l, h := v.c.Limits, v.c.HTTP2
	for _, d := range []durationRange{
		{"limits.read_header_timeout", l.ReadHeaderTimeout, time.Second, 10 * time.Minute},
		{"limits.body_idle_timeout", l.BodyIdleTimeout, time.Second, time.Hour},
		{"limits.body_read_timeout", l.BodyReadTimeout, time.Second, time.Hour},
		{"limits.keepalive_idle_timeout", l.KeepaliveIdleTimeout, time.Second, time.Hour},
		{"limits.tunnel_idle_timeout", l.TunnelIdleTimeout, time.Second, 24 * time.Hour},
		{"limits.tunnel_max_lifetime", l.TunnelMaxLifetime, time.Minute, 720 * time.Hour},
		{"limits.upstream_connect_timeout", l.UpstreamConnectTimeout, time.Second, 5 * time.Minute},
		{"limits.upstream_header_timeout", l.UpstreamHeaderTimeout, time.Second, time.Hour},
		{"http2.body_timeout", h.BodyTimeout, time.Second, time.Hour},
		{"http2.reset_window", h.ResetWindow, time.Second, time.Hour},
	} {
		// A Duration decoded from the file is never negative; one set in code may be.
		if d.v != 0 && (time.Duration(d.v) < d.min || time.Duration(d.v) > d.max) {
			v.fail(d.key, "%s is out of range: want %s to %s, or leave it out for the default", d.v, Duration(d.min), Duration(d.max))
		}
	}
	bytes := func(n int64) string { return ByteSize(n).String() }
	plain := func(n int64) string { return strconv.FormatInt(n, 10) }
	for _, r := range []intRange{
		{"limits.max_header_bytes", int64(l.MaxHeaderBytes), 8 << 10, 1 << 20, bytes},
		{"limits.max_header_count", int64(l.MaxHeaderCount), 1, 10000, plain},
		{"limits.max_url_bytes", int64(l.MaxURLBytes), 1 << 10, 1 << 20, bytes},
		{"limits.max_conns_per_client", int64(l.MaxConnsPerClient), 1, 1e6, plain},
		{"limits.max_conns_per_tenant", int64(l.MaxConnsPerTenant), 1, 1e6, plain},
		{"http2.max_concurrent_streams", int64(h.MaxConcurrentStreams), 1, 1000, plain},
		{"http2.max_header_bytes", int64(h.MaxHeaderBytes), 8 << 10, 1 << 20, bytes},
		{"http2.max_header_table_size", int64(h.MaxHeaderTableSize), 4 << 10, 64 << 10, bytes},
		{"http2.max_read_frame_size", int64(h.MaxReadFrameSize), 16 << 10, 1<<24 - 1, bytes},
		{"http2.max_resets", int64(h.MaxResets), 1, 100000, plain},
	} {
		if r.v != 0 && (r.v < r.min || r.v > r.max) {
			v.fail(r.key, "%s is out of range: want %s to %s, or leave it out for the default", r.unit(r.v), r.unit(r.min), r.unit(r.max))
		}
	}
	if t := v.c.Store.IncidentTimeout; t < Duration(MinIncidentTimeout) || t > Duration(MaxIncidentTimeout) {
		v.fail("store.incident_timeout", "%s is out of range: want %s to %s", t, Duration(MinIncidentTimeout), Duration(MaxIncidentTimeout))
	}
}
