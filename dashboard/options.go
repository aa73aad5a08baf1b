package dashboard

import (
	"context"
	"log/slog"
	"time"

	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/store"
)

// Options configure the admin router: health, metrics, the dashboard pages
// and the JSON API. Its zero value serves health only; every page and API
// call needs Store and at least one way in (Users or Identify).
type Options struct {
	// Metrics is served on /metrics. Nil: /metrics answers 404.
	Metrics *Metrics
	// Ready reports whether the gateway can serve: policy, CA and store
	// loaded and answering. Nil: always ready. /readyz answers 503 with
	// the error while it fails.
	Ready func(ctx context.Context) error
	// Logger nil: slog.Default().
	Logger *slog.Logger

	// Store holds incidents, runs, access requests and the audit log.
	// Nil: the pages and the API are not mounted.
	Store *store.Store
	// Engine returns the policy in force now (it changes on reload). Nil,
	// or a nil result: the policy page shows nothing.
	Engine func() *rules.Engine
	// Users may log in to the pages (session) or call the API (HTTP Basic).
	// Empty: only tenant tokens get in, and only to the API.
	Users []User
	// Identify checks a tenant token presented to the API as
	// `Authorization: Bearer <tenant>:<token>`; its signature is
	// rules.Engine.Identify's. Nil: tenant tokens are refused. Run tokens
	// (an Identity with Run set) are refused: a sandbox holds them.
	Identify func(user, token string) (rules.Identity, error)
	// SessionTTL is a login session's lifetime; zero: DefaultSessionTTL.
	SessionTTL time.Duration
	// Runs creates and ends runs for POST and DELETE /api/runs and decides
	// access requests (api_runs.go, api_access.go). Nil: those answer 503;
	// listing runs and requests still works from the Store.
	Runs RunManager
	// Now nil: time.Now.
	Now func() time.Time
	// Queue carries access-request events to the live queue (queue.go).
	// Nil: /api/access-requests/events answers 503 and the review page
	// does not update itself.
	Queue *Queue
}

func (o *Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}

func (o *Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

func (o *Options) engine() *rules.Engine {
	if o.Engine == nil {
		return nil
	}
	return o.Engine()
}
