package ops

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/store"
)

// Close commits what the writer holds before the store closes, stops the
// admin listener, and may be called again.
func TestCloseDrainsThenCloses(t *testing.T) {
	path := filepath.Join(t.TempDir(), store.FileName)
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &Ops{Store: st, Writer: &store.Writer{Store: st}, Admin: &http.Server{Handler: http.NotFoundHandler()}, AdminLn: ln}
	o.Serve(context.Background())
	id, err := o.Writer.Write(context.Background(), incident.Incident{Tenant: "acme", Reason: "host-not-allowed", Kind: "deny"})
	if err != nil {
		t.Fatal(err)
	}
	o.Close(context.Background())
	o.Close(context.Background())
	if !o.Draining() {
		t.Error("not draining after Close")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the admin listener still accepts")
	}
	again, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if _, err := again.GetIncident(context.Background(), id); err != nil {
		t.Fatalf("incident %s not committed: %v", id, err)
	}
	var zero Ops
	zero.Close(context.Background())
}
