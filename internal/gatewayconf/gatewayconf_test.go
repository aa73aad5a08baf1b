package gatewayconf

import (
	"reflect"
	"slices"
	"testing"

	"github.com/sluice-egress/sluice/config"
)

// TestGatewayLimits: every limits: and http2: key reaches the gateway; a
// field added to gateway.Limits or gateway.HTTP2 without a key fails here.
func TestGatewayLimits(t *testing.T) {
	cfg, err := config.Load("../../config/testdata/good/limits.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.HTTP2.Disable = true // false in the file, to show the key; set here to check it
	for _, v := range []any{Limits(cfg.Limits), HTTP2(cfg.HTTP2)} {
		rv := reflect.ValueOf(v)
		for i := range rv.NumField() {
			if rv.Field(i).IsZero() {
				t.Errorf("%T.%s is not set from the config", v, rv.Type().Field(i).Name)
			}
		}
	}
	if got := Limits(cfg.Limits); got.MaxHeaderBytes != 32<<10 || got.MaxConnsPerTenant != 2048 {
		t.Errorf("Limits = %+v", got)
	}
}

// Gateway carries the scanning:, limits: and http2: keys: the body and
// WebSocket bounds, the oversize choice and the keepalive idle timeout.
func TestGateway(t *testing.T) {
	cfg, err := config.Load("../../config/testdata/good/limits.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Scanning.MaxInflightBytes, cfg.Scanning.MaxBodyBytes = 3<<20, 1<<20
	cfg.Scanning.OnOversize = config.OnOversizeForward
	g := Gateway(cfg)
	if g.ScanMemory != 3<<20 || g.ScanBodyLimit != 1<<20 || g.MaxWebSocketMessage != 1<<20 || !g.ForwardOversize {
		t.Errorf("scanning: %d %d %d %v", g.ScanMemory, g.ScanBodyLimit, g.MaxWebSocketMessage, g.ForwardOversize)
	}
	if g.IdleTimeout == 0 || g.Limits != Limits(cfg.Limits) || g.HTTP2 != HTTP2(cfg.HTTP2) {
		t.Errorf("limits/http2 not carried: %+v", g)
	}
	cfg.Scanning.OnOversize = ""
	if Gateway(cfg).ForwardOversize {
		t.Error("oversize bodies forwarded without on_oversize: forward")
	}
	if g.SandboxCurves != nil {
		t.Errorf("sandbox key exchanges %v by default, want nil (Go's, post-quantum)", g.SandboxCurves)
	}
	cfg.TLS.SandboxKeyExchange = config.KeyExchangeClassical
	if got := Gateway(cfg).SandboxCurves; !slices.Equal(got, cfg.TLS.SandboxCurves()) || len(got) == 0 {
		t.Errorf("tls.sandbox_key_exchange: classical not carried: %v", got)
	}
}
