package main

import (
	"context"
	"time"

	"github.com/sluice-egress/sluice/internal/replica"
	"github.com/sluice-egress/sluice/store"
)

// openReplication wires a replica to its peers, when the store has any
// (store.driver: postgres): the gateway looks up unknown run tokens, reloads
// publish their version, and the metrics show the agreement. Call it after
// openRuns and openAdmin.
func (s *Server) openReplication() {
	st := s.ops.Store
	if st == nil || !st.Notifies() {
		return
	}
	r := &replica.Replica{ID: st.Replica, Store: st, Runs: s.runs, Version: s.fileVersion, Logger: s.Logger}
	r.SetVersion(s.fileVersion())
	if s.watch != nil {
		r.Reread = func(why string) { s.watch.Now(why) }
	}
	r.Listener = &store.Listener{Store: st, OnChange: r.OnChange, Logger: s.Logger}
	s.repl = r
	s.gw.Policy = &replica.PeerPolicy{Policy: s.gw.Policy, Lookup: func(token string) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return s.runs.LookupToken(ctx, token)
	}}
	if s.watch != nil {
		counted := s.watch.OnResult
		s.watch.OnResult = func(ok bool) {
			if counted != nil {
				counted(ok)
			}
			if ok {
				r.PolicyLoaded()
			}
		}
	}
	s.metrics.Registry.MustRegister(r.Collectors()...)
}

// fileVersion is the version of the policy file as last loaded: the first
// bytes of its hash, or "embedded" without a file.
func (s *Server) fileVersion() string {
	if s.watch == nil {
		return "embedded"
	}
	return s.watch.Version()
}
