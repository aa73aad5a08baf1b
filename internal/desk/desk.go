// Package desk adapts the review loop to the gateway and the operators: the
// gateway's Desk and Observer on the runs service (the access requests
// sandboxes file or the gateway holds connections for, the observation log
// of what runs did), the webhook notice of a new request and the audit of
// class mode changes.
package desk

import (
	"context"
	"errors"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/internal/runstore"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

// Observer hands the gateway's observations to the store's batching writer.
type Observer struct {
	// W batches the observations into the store.
	W *store.ObservationWriter
}

var _ gateway.Observer = Observer{}

// Observe adds ob to the writer's batch; it does not block.
func (o Observer) Observe(ob gateway.Observation) {
	v := store.ObservedAllowed
	if ob.Shadow {
		v = store.ObservedShadow
	}
	o.W.Add(store.Observation{Tenant: ob.Who.Tenant, Class: ob.Who.Class, Run: ob.Who.Run, Host: ob.Host, Port: ob.Port,
		Method: ob.Method, Path: ob.Path, Verdict: v})
}

// Desk is the gateway's Desk on the runs service.
type Desk struct {
	// Service files, holds and decides the requests.
	Service *runs.Service
	// Store reads a request's state and context for Status.
	Store runstore.Store
}

var _ gateway.Desk = Desk{}

func filingOf(f gateway.Filing) runs.Filing {
	return runs.Filing{Tenant: f.Who.Tenant, Class: f.Who.Class, Run: f.Who.Run, Host: f.Host, Ports: f.Ports,
		Methods: f.Methods, Paths: f.Paths, Reason: f.Reason, Incident: f.Incident}
}

func filedOf(x runs.AccessRequest) gateway.Filed {
	f := gateway.Filed{ID: x.ID, State: x.State, Host: x.Host}
	if x.State != store.AccessPending {
		f.Note = x.Reason
	}
	return f
}

// deskErr maps the service's errors to the gateway's.
func deskErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, runs.ErrLimited):
		return gateway.ErrFilingLimited
	case errors.Is(err, runs.ErrInvalid):
		return errors.Join(gateway.ErrFilingInvalid, err)
	case errors.Is(err, store.ErrNotFound):
		return gateway.ErrFilingNotFound
	}
	return err
}

// File files (or joins) a sandbox's access request.
func (d Desk) File(ctx context.Context, f gateway.Filing) (gateway.Filed, error) {
	x, err := d.Service.FileAccess(ctx, filingOf(f))
	return filedOf(x.Request), deskErr(err)
}

// Await files a held connection's request and waits for its decision.
func (d Desk) Await(ctx context.Context, f gateway.Filing) (gateway.Filed, error) {
	x, err := d.Service.AwaitAccess(ctx, filingOf(f))
	if ctxErr := ctx.Err(); ctxErr != nil && err != nil {
		return filedOf(x), ctxErr
	}
	return filedOf(x), deskErr(err)
}

// Status shows a request to the run (or tenant token) that filed it only.
func (d Desk) Status(ctx context.Context, who rules.Identity, id string) (gateway.Filed, error) {
	x, err := d.Store.GetAccessRequest(ctx, id)
	if err != nil {
		return gateway.Filed{}, deskErr(err)
	}
	c, err := d.Store.GetAccessContext(ctx, id)
	if err != nil {
		return gateway.Filed{}, err
	}
	if x.Tenant != who.Tenant || c.Run != who.Run {
		return gateway.Filed{}, gateway.ErrFilingNotFound
	}
	return filedOf(x), nil
}
