package scanner

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
