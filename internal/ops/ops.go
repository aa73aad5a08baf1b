// Package ops runs what a gateway serves beside its proxy: the admin
// listener, incident retention, and the incident writer, drained before the
// store closes.
package ops

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-egress/sluice/store"
)

// Ops is the incident store with its writer and retention, and the admin
// listener. Set the fields, then Serve; Close once the proxy has stopped.
type Ops struct {
	// Store holds the incidents; Close closes it. nil: nothing to close.
	Store *store.Store
	// Writer batches incidents into Store; Close drains it first.
	Writer *store.Writer
	// Admin serves AdminLn (health, metrics, the dashboard).
	Admin   *http.Server
	AdminLn net.Listener
	// Retention prunes incidents older than this. Zero: store.Retention's default.
	Retention time.Duration
	// Logger nil: slog.Default().
	Logger *slog.Logger

	draining  atomic.Bool
	stop      context.CancelFunc // ends retention
	done      sync.WaitGroup
	closeOnce sync.Once
}

func (o *Ops) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}

// Drain marks the gateway as shutting down: Draining is true from now on.
func (o *Ops) Drain() { o.draining.Store(true) }

// Draining reports whether the gateway is shutting down (/readyz fails).
func (o *Ops) Draining() bool { return o.draining.Load() }

// Serve starts the admin listener and the retention loop in the background.
func (o *Ops) Serve(ctx context.Context) {
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	o.stop = stop
	ret := &store.Retention{Store: o.Store, MaxAge: o.Retention, Logger: o.Logger}
	o.done.Go(func() { ret.Run(rctx) })
	o.done.Go(func() {
		if err := o.Admin.Serve(o.AdminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.logger().Error("admin listener", "err", err)
		}
	})
}

// Close drains the incident writer (every incident already handed to it is
// committed), then stops the admin listener and closes the store. Call it
// after the proxy has stopped; it is safe to call twice, and after a start
// that failed half-way.
func (o *Ops) Close(ctx context.Context) {
	o.draining.Store(true)
	o.closeOnce.Do(func() {
		if o.Writer != nil {
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			if err := o.Writer.Close(wctx); err != nil {
				o.logger().Error("incident writer: not drained", "queued", o.Writer.Depth(), "err", err)
			}
			cancel()
		}
		if o.Admin != nil {
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			o.Admin.Shutdown(actx)
			cancel()
		}
		if o.AdminLn != nil {
			o.AdminLn.Close() // never served when the start failed after binding it
		}
		if o.stop != nil {
			o.stop()
		}
		o.done.Wait()
		if o.Store != nil {
			if err := o.Store.Close(); err != nil {
				o.logger().Error("incident store: close", "err", err)
			}
		}
	})
}
