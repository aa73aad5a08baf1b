package config

import (
	"strings"
	"testing"
)

func TestAlertsConfig(t *testing.T) {
	tests := []struct {
		name, yaml, want string // want "" for valid
	}{
		{"good", "alerts:\n  dashboard_url: https://sluice.corp.test\n  webhooks:\n    - {name: sec, url_env: SEC_HOOK, format: slack, min_action: block}\n    - {url_file: hook.url}\n", ""},
		{"no url", "alerts:\n  webhooks:\n    - {format: json}\n", "set url_env or url_file"},
		{"url in the config", "alerts:\n  webhooks:\n    - {url: https://hooks.example.test/T0KEN}\n", "url"},
		{"both", "alerts:\n  webhooks:\n    - {url_env: A, url_file: b}\n", "not both"},
		{"bad format", "alerts:\n  webhooks:\n    - {url_env: A, format: xml}\n", "format"},
		{"bad min_action", "alerts:\n  webhooks:\n    - {url_env: A, min_action: deny}\n", "min_action"},
		{"dup name", "alerts:\n  webhooks:\n    - {name: a, url_env: A}\n    - {name: a, url_env: B}\n", "duplicate"},
		{"creds in dashboard_url", "alerts:\n  dashboard_url: https://u:p@sluice.test\n", "dashboard_url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml), "sluice.yaml")
			if err == nil {
				err = c.Validate()
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
