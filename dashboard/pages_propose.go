package dashboard

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/internal/runstore"
	"github.com/sluice-egress/sluice/runs"
)

// The propose page drafts a tenant's least-privilege policy from what its
// runs did, as `sluice policy propose` does: the entries ranked by risk with
// their evidence, and the YAML to review and paste.

type proposeData struct {
	Tenant, Class, Since string
	Tenants              []string
	Proposal             runs.Proposal
	YAML                 string
	Observed             int
}

func (p *pages) propose(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := proposeData{Tenant: q.Get("tenant"), Class: q.Get("class"), Since: q.Get("since")}
	if d.Since == "" {
		d.Since = "7d"
	}
	if e := p.o.engine(); e != nil {
		d.Tenants = e.Tenants()
	}
	if d.Tenant == "" {
		p.render(w, r, http.StatusOK, "propose", "Propose a policy", d)
		return
	}
	since, err := parseSince(d.Since)
	if err != nil {
		p.fail(w, r, fmt.Errorf("%w: since: %v", errBadInput, err))
		return
	}
	obs, err := runstore.Observed(r.Context(), p.o.Store, d.Tenant, d.Class, p.o.now().Add(-since))
	if err != nil {
		p.fail(w, r, err)
		return
	}
	d.Observed = len(obs)
	d.Proposal = runs.Propose(runs.ProposeInput{Tenant: d.Tenant, Class: d.Class, Observed: obs})
	env := "SLUICE_" + strings.ToUpper(strings.ReplaceAll(d.Tenant, "-", "_")) + "_TOKEN"
	d.YAML = string(d.Proposal.YAML(runs.YAMLOptions{TokenEnv: env, Header: []string{
		"Drafted on the dashboard for tenant " + d.Tenant + " since " + d.Since + "; set the token reference as in your config.",
	}}))
	p.render(w, r, http.StatusOK, "propose", "Propose a policy", d)
}

// parseSince reads "7d", "2w" or a Go duration ("36h").
func parseSince(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			v, err := strconv.Atoi(n)
			if err != nil || v <= 0 || v > 3650 {
				return 0, fmt.Errorf("%q: want a period such as 7d, 2w or 36h", s)
			}
			return time.Duration(v) * unit, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q: want a period such as 7d, 2w or 36h", s)
	}
	return d, nil
}
