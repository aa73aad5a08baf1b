package config

import (
	"testing"
	"time"
)

func TestLoadLimits(t *testing.T) {
	c, err := Load("testdata/good/limits.yaml")
	if err != nil {
		t.Fatal(err)
	}
	l, h := c.Limits, c.HTTP2
	if time.Duration(l.ReadHeaderTimeout) != 5*time.Second || time.Duration(l.KeepaliveIdleTimeout) != 90*time.Second ||
		time.Duration(l.TunnelMaxLifetime) != 12*time.Hour || l.MaxHeaderBytes != 32<<10 || l.MaxURLBytes != 8<<10 ||
		l.MaxHeaderCount != 64 || l.MaxConnsPerClient != 128 || l.MaxConnsPerTenant != 2048 {
		t.Errorf("Limits = %+v", l)
	}
	if h.MaxConcurrentStreams != 50 || h.MaxReadFrameSize != 32<<10 || h.MaxHeaderTableSize != 8<<10 ||
		h.MaxResets != 200 || time.Duration(h.ResetWindow) != 20*time.Second {
		t.Errorf("HTTP2 = %+v", h)
	}
	if time.Duration(c.Store.IncidentTimeout) != 3*time.Second {
		t.Errorf("incident_timeout = %s", c.Store.IncidentTimeout)
	}
}

// TestLimitsDefaults: absent keys are zero (the gateway's defaults), except the
// incident timeout, which the config fills in.
func TestLimitsDefaults(t *testing.T) {
	c := Default()
	if c.Limits != (Limits{}) || c.HTTP2 != (HTTP2{}) {
		t.Errorf("Limits = %+v, HTTP2 = %+v, want zero", c.Limits, c.HTTP2)
	}
	if c.Store.IncidentTimeout != DefaultIncidentTimeout {
		t.Errorf("incident_timeout = %s, want %s", c.Store.IncidentTimeout, DefaultIncidentTimeout)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// In code a negative value can be set: it is refused, not read as the default.
	c.Limits.UpstreamHeaderTimeout = Duration(-time.Second)
	c.HTTP2.MaxHeaderBytes = -1
	if err := c.Validate(); err == nil {
		t.Fatal("negative limits validated")
	}
}
