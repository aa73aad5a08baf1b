package scanner

import "strings"

// canaryEnv names the variable each kind of canary (CanaryStore.Issue) is planted as.
var canaryEnv = map[string]string{
	"aws-access-key-id":     "AWS_ACCESS_KEY_ID",
	"aws-secret-access-key": "AWS_SECRET_ACCESS_KEY",
	"github-pat":            "GITHUB_TOKEN",
	"api-key":               "API_KEY",
}

// EnvName is the environment variable the canary is planted as in a sandbox, where
// a tool looks for a credential of its kind.
func (c Canary) EnvName() string { return canaryEnv[c.Kind] }

// IssueCanaries mints a set of canaries for tenant (and run) with the fingerprint
// key of the data directory dir (created on first use) and stores their records
// there, where the gateway looks for them.
func IssueCanaries(dir, tenant, run string) ([]Canary, error) {
	key, err := LoadOrCreateKey(dir)
	if err != nil {
		return nil, err
	}
	return (&CanaryStore{Dir: dir, Key: key}).Issue(tenant, strings.TrimSpace(run))
}
