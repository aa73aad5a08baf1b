// Package operatorconf hands the config's dashboard users and alert webhooks
// to the dashboard and the alert sink, which do not know the config.
package operatorconf

import (
	"fmt"

	"github.com/sluice-egress/sluice/alert"
	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/dashboard"
)

// DashboardUsers loads the config's dashboard users with their password
// hashes (from files or the environment). A missing or malformed hash is a
// start-up error; errors never include the hash.
func DashboardUsers(cfg *config.Config, getenv func(string) string) ([]dashboard.User, error) {
	var out []dashboard.User
	for i := range cfg.Dashboard.Users {
		u := &cfg.Dashboard.Users[i]
		h, err := cfg.DashboardHash(u, getenv)
		if err != nil {
			return nil, err
		}
		if err := dashboard.CheckHash(h); err != nil {
			return nil, fmt.Errorf("dashboard user %s: the password hash is neither bcrypt nor argon2id "+
				"(make one with `sluice user hash`)", u.Name)
		}
		out = append(out, dashboard.User{Name: u.Name, Role: dashboard.Role(u.Role), Tenant: u.Tenant, Hash: h})
	}
	return out, nil
}

// Webhooks resolves the configured webhooks' URLs. Errors name the reference, never
// the URL.
func Webhooks(cfg *config.Config, getenv func(string) string) ([]alert.Webhook, error) {
	var out []alert.Webhook
	for i, w := range cfg.Alerts.Webhooks {
		raw, err := cfg.WebhookURL(i, getenv)
		if err != nil {
			return nil, err
		}
		name := w.Name
		if name == "" {
			name = fmt.Sprintf("webhook-%d", i)
		}
		out = append(out, alert.Webhook{Name: name, URL: raw, Format: alert.Format(w.Format), MinAction: w.MinAction, PerMinute: w.PerMinute})
	}
	return out, nil
}
