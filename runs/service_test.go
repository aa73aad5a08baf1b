package runs_test

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/runstore"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/runs"
	"github.com/sluice-egress/sluice/store"
)

const policy = `
tenants:
  acme:
    token_env: RUNS_TEST_ACME_TOKEN
    classes:
      agent:
        allow:
          - host: api.example.test
`

// world is a runs.Service on a real engine and store; failStore lets a test
// make one store call fail.
type world struct {
	svc    *runs.Service
	engine *rules.Engine
	st     *store.Store
	store  *failStore
	gw     *fakeGateway
}

// failStore is the real store, with hooks that tests set to make a call fail.
type failStore struct {
	runstore.Store
	CreateRunFn func(ctx context.Context, r runs.Run) (runs.Run, error)
	// byToken counts RunByTokenHash calls.
	byToken int
}

func (f *failStore) RunByTokenHash(ctx context.Context, h string) (runs.Run, error) {
	f.byToken++
	return f.Store.RunByTokenHash(ctx, h)
}

func (f *failStore) CreateRun(ctx context.Context, r runs.Run) (runs.Run, error) {
	if f.CreateRunFn != nil {
		return f.CreateRunFn(ctx, r)
	}
	return f.Store.CreateRun(ctx, r)
}

// fakeGateway counts what the service asks of the gateway (no tunnels here).
type fakeGateway struct{ closed, rechecked atomic.Int64 }

func (g *fakeGateway) CloseRun(string) int { g.closed.Add(1); return 0 }
func (g *fakeGateway) PolicyChanged() int  { g.rechecked.Add(1); return 0 }

func newWorld(t *testing.T) *world { return newReplica(t, nil) }

// newReplica is a world sharing peer's store (a replica beside it), or with
// a store of its own when peer is nil.
func newReplica(t *testing.T, peer *world) *world {
	t.Helper()
	tok, err := rules.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("RUNS_TEST_ACME_TOKEN", tok)
	cfg, err := config.Parse([]byte(policy), "sluice.yaml")
	if err == nil {
		err = cfg.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	w := &world{gw: &fakeGateway{}}
	if w.engine, err = rules.Compile(cfg.Policy(), cfg.Token); err != nil {
		t.Fatal(err)
	}
	if peer != nil {
		w.st = peer.st
	} else if w.st, err = store.Open(context.Background(), filepath.Join(t.TempDir(), store.FileName)); err != nil {
		t.Fatal(err)
	} else {
		t.Cleanup(func() { w.st.Close() })
	}
	w.store = &failStore{Store: runstore.New(w.st)}
	w.svc = &runs.Service{
		Store:  w.store,
		Engine: func() *rules.Engine { return w.engine },
		Resolve: func(in rules.PolicyInput) (*rules.EffectivePolicy, error) {
			in.Policy = cfg.Policy()
			return rules.ResolvePolicy(in)
		},
		TenantCA:  func(string) ([]byte, error) { return []byte("PEM"), nil },
		Gateway:   func() runs.Gateway { return w.gw },
		ProxyAddr: func() string { return "gw.test:3128" },
		Env:       func(p *url.URL) []string { return []string{"HTTPS_PROXY=" + p.String()} },
		Logger:    slog.New(slog.DiscardHandler),
	}
	return w
}

// works reports whether the run token identifies the run.
func (w *world) works(c runs.Created) bool {
	id, err := w.engine.Identify("acme", c.Token)
	return err == nil && id.Run == c.Run.ID
}

func TestCreateAndEndRun(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	c, err := w.svc.CreateRun(ctx, runs.Request{Tenant: "acme", Class: "agent", TTL: time.Hour,
		RepoRemote: "https://x-access-token:SECRET@github.com/acme/app.git", Actor: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	if !w.works(c) {
		t.Fatal("the new run's token does not identify it")
	}
	if c.CAPEM != "PEM" || c.ProxyURL != "http://acme:"+c.Token+"@gw.test:3128" || len(c.Env) != 1 {
		t.Errorf("answer %+v", c)
	}
	stored, err := w.st.GetRun(ctx, c.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stored.RepoRemote, "SECRET") || strings.Contains(stored.TokenHash, c.Token) {
		t.Errorf("stored run keeps a secret: %+v", stored)
	}
	if _, err := w.svc.EndRun(ctx, c.Run.ID, "ada"); err != nil {
		t.Fatal(err)
	}
	if w.works(c) || w.gw.closed.Load() != 1 {
		t.Errorf("after EndRun: token works %v, tunnels closed %d times", w.works(c), w.gw.closed.Load())
	}
	if _, err := w.svc.EndRun(ctx, "run_unknown", "ada"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ending an unknown run: %v", err)
	}
}

// A run the store did not keep must not work: it would not survive a restart.
func TestCreateRunNotStored(t *testing.T) {
	w := newWorld(t)
	var tried runs.Run
	w.store.CreateRunFn = func(ctx context.Context, r runs.Run) (runs.Run, error) {
		tried = r
		return runs.Run{}, errors.New("disk full")
	}
	if _, err := w.svc.CreateRun(context.Background(), runs.Request{Tenant: "acme", TTL: time.Hour}); err == nil {
		t.Fatal("CreateRun succeeded without the store")
	}
	if tried.ID == "" {
		t.Fatal("the store was not asked")
	}
	if w.engine.RemoveRun(tried.ID) {
		t.Errorf("run %s is still registered with the engine: its token works", tried.ID)
	}
}

func TestCreateRunInvalid(t *testing.T) {
	w := newWorld(t)
	for _, r := range []runs.Request{
		{Tenant: "nobody", TTL: time.Hour},
		{Tenant: "acme", Class: "nope", TTL: time.Hour},
		{Tenant: "acme", TTL: time.Hour, Extras: []rules.Entry{{Host: "elsewhere.example.test"}}},
	} {
		if _, err := w.svc.CreateRun(context.Background(), r); !errors.Is(err, runs.ErrInvalid) {
			t.Errorf("%+v: err = %v, want ErrInvalid", r, err)
		}
	}
}

// Restored runs keep working after a restart; expired ones are ended by the sweep.
func TestOpenRestoresAndSweeps(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	live, err := w.svc.CreateRun(ctx, runs.Request{Tenant: "acme", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	short, err := w.svc.CreateRun(ctx, runs.Request{Tenant: "acme", TTL: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// A restart: a new engine and service on the same store.
	cfg, _ := config.Parse([]byte(policy), "sluice.yaml")
	cfg.Validate()
	w.engine, _ = rules.Compile(cfg.Policy(), cfg.Token)
	w.svc = &runs.Service{Store: w.store, Engine: w.svc.Engine, Resolve: w.svc.Resolve, Gateway: w.svc.Gateway,
		Interval: 20 * time.Millisecond, Logger: w.svc.Logger}
	if err := w.svc.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if !w.works(live) {
		t.Fatal("a live run's token stopped working across the restart")
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { w.svc.Run(runCtx); close(done) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, err := w.st.GetRun(ctx, short.Run.ID)
		if err == nil && !r.Ended.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the expired run was not ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if r, _ := w.st.GetRun(ctx, live.Run.ID); !r.Ended.IsZero() {
		t.Error("the sweep ended a live run")
	}
}

// An approval applies at once; a grant that goes away re-checks the tunnels.
func TestDecideAccessAndRefresh(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	x, err := w.st.CreateAccessRequest(ctx, store.AccessRequest{Tenant: "acme", Host: "pkg.example.test",
		Justification: "builds", ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.svc.DecideAccess(ctx, runs.Decision{ID: x.ID, Approve: true, Reviewer: "rex", Reason: "ok"})
	if err != nil || got.State != store.AccessApproved {
		t.Fatalf("decide: %+v %v", got, err)
	}
	if g := w.engine.Grants(); len(g) != 1 || g[0].Entry.Host != "pkg.example.test" {
		t.Fatalf("engine grants %+v", g)
	}
	if _, err := w.svc.DecideAccess(ctx, runs.Decision{ID: x.ID, Approve: false, Reviewer: "rex"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second decision: %v, want a conflict", err)
	}
	if w.gw.rechecked.Load() != 0 {
		t.Fatalf("tunnels re-checked %d times before any grant ended", w.gw.rechecked.Load())
	}
	// The grant ends: it leaves the engine and open tunnels are re-checked.
	if _, err := w.st.ExpireAccessRequests(ctx, time.Now().Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := w.svc.RefreshGrants(ctx); err != nil {
		t.Fatal(err)
	}
	if g := w.engine.Grants(); len(g) != 0 || w.gw.rechecked.Load() != 1 {
		t.Errorf("after the grant ended: grants %+v, re-checked %d times", g, w.gw.rechecked.Load())
	}
}
