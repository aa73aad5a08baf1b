package config

import (
	"fmt"
	"net/url"
	"regexp"
)

// Alerts configures where incidents are alerted besides the store.
type Alerts struct {
	// Webhooks receive one POST per incident at or above their min_action. Empty: none.
	Webhooks []Webhook `yaml:"webhooks"`
	// DashboardURL, when set, makes each alert link to the incident on the dashboard
	// ("https://sluice.corp.test"). It is no secret.
	DashboardURL string `yaml:"dashboard_url"`
}

// Webhook is one alert destination. Its URL often holds a secret token, so the
// config only references it: exactly one of URLEnv and URLFile.
type Webhook struct {
	// Name labels the webhook in logs and metrics; "" is "webhook-N" (its index).
	Name string `yaml:"name"`
	// URLEnv names the environment variable holding the URL.
	URLEnv string `yaml:"url_env"`
	// URLFile is a file holding the URL (relative to the config file).
	URLFile string `yaml:"url_file"`
	// Format is "json" (the default when empty) or "slack".
	Format string `yaml:"format"`
	// MinAction is the weakest action alerted: "block" (the default when empty),
	// "redact" or "alert".
	MinAction string `yaml:"min_action"`
	// PerMinute bounds the alerts per minute; more are coalesced. Zero: 30.
	PerMinute int `yaml:"per_minute"`
}

var webhookNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

func (v *validator) alerts() {
	a := &v.c.Alerts
	if a.DashboardURL != "" {
		if u, err := url.Parse(a.DashboardURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			v.fail("alerts.dashboard_url", "want an http(s) URL without credentials, such as https://sluice.corp.test")
		}
	}
	names := map[string]bool{}
	for i, w := range a.Webhooks {
		key := fmt.Sprintf("alerts.webhooks[%d]", i)
		if w.Name != "" {
			if !webhookNameRE.MatchString(w.Name) {
				v.fail(key+".name", "bad name %q: lower-case letters, digits, '-' and '_', at most 32", w.Name)
			} else if names[w.Name] {
				v.fail(key+".name", "duplicate webhook name %q", w.Name)
			}
			names[w.Name] = true
		}
		switch {
		case w.URLEnv == "" && w.URLFile == "":
			v.fail(key, "set url_env or url_file (the URL is a secret: never written in the config)")
		case w.URLEnv != "" && w.URLFile != "":
			v.fail(key+".url_env", "set url_env or url_file, not both")
		case w.URLEnv != "" && !envRE.MatchString(w.URLEnv):
			v.fail(key+".url_env", "bad environment variable name %q", w.URLEnv)
		}
		switch w.Format {
		case "", "json", "slack":
		default:
			v.fail(key+".format", "got %q, want json or slack", w.Format)
		}
		switch w.MinAction {
		case "", "block", "redact", "alert":
		default:
			v.fail(key+".min_action", "got %q, want block, redact or alert", w.MinAction)
		}
		if w.PerMinute < 0 {
			v.fail(key+".per_minute", "must not be negative")
		}
	}
}
