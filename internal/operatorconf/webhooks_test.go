package operatorconf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-egress/sluice/config"
)

func TestWebhooksConfig(t *testing.T) {
	dir := t.TempDir()
	const secretURL = "https://hooks.example.test/services/T0KEN-SECRET"
	if err := os.WriteFile(filepath.Join(dir, "hook.url"), []byte(secretURL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Path: filepath.Join(dir, "sluice.yaml")}
	cfg.Alerts.Webhooks = []config.Webhook{{URLFile: "hook.url", Format: "slack"}, {Name: "sec", URLEnv: "HOOK"}}
	env := map[string]string{"HOOK": "https://hooks.example.test/json"}
	hooks, err := Webhooks(cfg, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 2 || hooks[0].URL != secretURL || hooks[0].Name != "webhook-0" || hooks[1].Name != "sec" {
		t.Fatalf("hooks %+v", hooks)
	}
	// Errors name the reference, never the URL.
	env["HOOK"] = "ftp://T0KEN-SECRET@hooks.example.test/"
	_, err = Webhooks(cfg, func(k string) string { return env[k] })
	if err == nil || strings.Contains(err.Error(), "T0KEN") || !strings.Contains(err.Error(), "alerts.webhooks[1]") {
		t.Fatalf("err = %v", err)
	}
	env["HOOK"] = ""
	if _, err := Webhooks(cfg, func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "HOOK") {
		t.Fatalf("empty env: err = %v", err)
	}
}
