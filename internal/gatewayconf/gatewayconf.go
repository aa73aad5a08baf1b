// Package gatewayconf hands the config's limits: and http2: keys to the
// gateway, which does not know the config.
package gatewayconf

import (
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/gateway"
)

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
