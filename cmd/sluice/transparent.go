package main

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/internal/probetag"
	"github.com/sluice-egress/sluice/rules"
)

// openTransparent binds listen.transparent_tls and listen.transparent_http (each
// only when set): connections the sandboxes' network redirects to the gateway,
// identified by their source address in the sources table.
func (s *Server) openTransparent() error {
	cfg := s.Config
	sn := &s.sandbox
	if cfg.Listen.TransparentTLS == "" && cfg.Listen.TransparentHTTP == "" {
		return nil
	}
	sn.tp = &gateway.Transparent{
		Gateway: s.gw,
		Sources: gateway.SourcesFunc(func(a netip.Addr) (rules.Identity, bool) {
			id, ok := sn.table.Lookup(a)
			return rules.Identity{Tenant: id.Tenant, Class: id.Class, Run: id.Run}, ok
		}),
		ProbeKey: func(tenant string) []byte {
			a, err := s.cas.Authority(tenant)
			if err != nil {
				return nil
			}
			return probetag.KeyFromCA(a.Certificate().Raw)
		},
	}
	var err error
	if cfg.Listen.TransparentTLS != "" {
		if sn.tlsLn, err = net.Listen("tcp", cfg.Listen.TransparentTLS); err != nil {
			return fmt.Errorf("transparent TLS listener: %w (change listen.transparent_tls)", err)
		}
	}
	if cfg.Listen.TransparentHTTP != "" {
		if sn.httpLn, err = net.Listen("tcp", cfg.Listen.TransparentHTTP); err != nil {
			return fmt.Errorf("transparent HTTP listener: %w (change listen.transparent_http)", err)
		}
	}
	return nil
}

// serveTransparent serves the transparent listeners in the background.
func (s *Server) serveTransparent() {
	sn := &s.sandbox
	if sn.tlsLn != nil {
		go func() {
			if err := sn.tp.ServeTLS(sn.tlsLn); err != nil {
				s.Logger.Error("transparent TLS listener stopped", "err", err)
			}
		}()
	}
	if sn.httpLn != nil {
		go func() {
			if err := sn.tp.ServeHTTP(sn.httpLn); err != nil {
				s.Logger.Error("transparent HTTP listener stopped", "err", err)
			}
		}()
	}
}
