package alert

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-egress/sluice/incident"
)

type recorderFunc func(incident.Incident) string

func (f recorderFunc) Emit(_ context.Context, e incident.Incident) (string, error) { return f(e), nil }

// Only what the store recorded is alerted, with the store's id and without the query.
func TestRecorded(t *testing.T) {
	rcv := newReceiver(t)
	s := &Sink{Webhooks: []Webhook{{URL: rcv.srv.URL}}}
	stored := 0
	k := &Recorded{Alerts: s, Inner: recorderFunc(func(e incident.Incident) string {
		if e.Tenant == "" {
			return ""
		}
		stored++
		return "inc_stored"
	})}
	in := blockIncident("")
	in.Path = "/v1/upload?token=sekrit"
	if id, _ := k.Emit(context.Background(), in); id != "inc_stored" {
		t.Fatalf("Emit = %q, want the store's id", id)
	}
	anon := blockIncident("")
	anon.Tenant = ""
	if id, _ := k.Emit(context.Background(), anon); id != "" {
		t.Fatalf("Emit of an unstored incident = %q", id)
	}
	closeSink(t, s)
	got := rcv.bodies()
	if stored != 1 || len(got) != 1 {
		t.Fatalf("stored %d, alerted %d; want 1 and 1", stored, len(got))
	}
	if b := string(got[0]); !strings.Contains(b, "inc_stored") || strings.Contains(b, "sekrit") {
		t.Fatalf("alert %s: want the stored id and no query", b)
	}
}
