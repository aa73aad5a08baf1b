// Package gatewayconf hands the config's scanning:, limits:, http2:, tls: and dns:
// keys to the gateway and the sandboxes' resolver, which do not know the config.
package gatewayconf

import (
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/gateway"
)

// Gateway is a gateway with the config's scanning:, limits:, http2: and tls:
// keys set; the caller wires the rest (policy, dialer, scanner, events).
func Gateway(cfg *config.Config) *gateway.Gateway {
	return &gateway.Gateway{
		// Bodies are held in memory while scanned: bound them all together.
		ScanMemory:    int64(cfg.Scanning.MaxInflightBytes),
		ScanBodyLimit: int64(cfg.Scanning.MaxBodyBytes),
		// A body declared over the limit is refused at once unless the
		// policy forwards oversize bodies.
		ForwardOversize: cfg.Scanning.ForwardsOversize(),
		// A WebSocket message is scanned whole, as a body is.
		MaxWebSocketMessage: int64(cfg.Scanning.MaxBodyBytes),
		IdleTimeout:         time.Duration(cfg.Limits.KeepaliveIdleTimeout),
		Limits:              Limits(cfg.Limits),
		HTTP2:               HTTP2(cfg.HTTP2),
		// The sandbox's hop only: upstream TLS keeps Go's (post-quantum) defaults.
		SandboxCurves: cfg.TLS.SandboxCurves(),
	}
}

// Limits hands the limits: keys to the gateway (keepalive_idle_timeout is
// Gateway.IdleTimeout); zero stays the gateway's default.
func Limits(l config.Limits) gateway.Limits {
	return gateway.Limits{
		ReadHeaderTimeout:      time.Duration(l.ReadHeaderTimeout),
		BodyIdleTimeout:        time.Duration(l.BodyIdleTimeout),
		BodyReadTimeout:        time.Duration(l.BodyReadTimeout),
		TunnelIdleTimeout:      time.Duration(l.TunnelIdleTimeout),
		TunnelMaxLifetime:      time.Duration(l.TunnelMaxLifetime),
		UpstreamConnectTimeout: time.Duration(l.UpstreamConnectTimeout),
		UpstreamHeaderTimeout:  time.Duration(l.UpstreamHeaderTimeout),
		MaxHeaderBytes:         int(l.MaxHeaderBytes),
		MaxHeaderCount:         l.MaxHeaderCount,
		MaxURLBytes:            int(l.MaxURLBytes),
		MaxConnsPerClient:      l.MaxConnsPerClient,
		MaxConnsPerTenant:      l.MaxConnsPerTenant,
	}
}

// HTTP2 hands the http2: keys to the gateway; Validate bounded them.
func HTTP2(h config.HTTP2) gateway.HTTP2 {
	return gateway.HTTP2{
		Disable:                   h.Disable,
		MaxConcurrentStreams:      uint32(h.MaxConcurrentStreams),
		MaxHeaderBytes:            int(h.MaxHeaderBytes),
		MaxDecoderHeaderTableSize: uint32(h.MaxHeaderTableSize),
		MaxReadFrameSize:          uint32(h.MaxReadFrameSize),
		BodyTimeout:               time.Duration(h.BodyTimeout),
		MaxResets:                 h.MaxResets,
		ResetWindow:               time.Duration(h.ResetWindow),
	}
}
