package config

import (
	"slices"
	"strings"
	"testing"
)

const credBase = `tenants:
  acme:
    token_env: ACME_TOKEN
    classes: {agent: {}}
    credentials:
`

func TestCredentialsGood(t *testing.T) {
	c, err := Parse([]byte(credBase+`      - name: github
        secret_file: secrets/github.token
        hosts: [github.com, "*.GitHub.com"]
        inject: basic
        user: x-access-token
        env: [GITHUB_TOKEN, GH_TOKEN]
        prefix: ghp_
        length: 40
      - name: anthropic
        secret_env: ANTHROPIC_REAL
        hosts: [api.anthropic.com]
        ports: [443, 8443]
        paths: [/v1/]
        inject: header
        header: x-api-key
        format: anthropic-api-key
      - name: maps
        secret_env: MAPS_KEY
        hosts: [maps.example.test]
        inject: query
        query: key
`), "cred.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c.Path = "/etc/sluice/cred.yaml"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	cs := c.Tenants["acme"].Credentials
	if len(cs) != 3 || cs[0].Inject != InjectBasic || cs[1].Header != "x-api-key" || cs[2].Query != "key" {
		t.Fatalf("credentials = %+v", cs)
	}
	if got := cs[0].HostPatterns(); !slices.Equal(got, []string{"github.com", "*.github.com"}) {
		t.Errorf("HostPatterns = %q", got)
	}
	if got := c.SecretPath(&cs[0]); got != "/etc/sluice/secrets/github.token" {
		t.Errorf("SecretPath = %q", got)
	}
	if got := cs[2].EnvNames(); !slices.Equal(got, []string{"SLUICE_PHANTOM_MAPS"}) {
		t.Errorf("EnvNames = %q", got)
	}
}

func TestCredentialsBad(t *testing.T) {
	const ok = "        secret_env: X\n        hosts: [api.example.test]\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"no host", "      - name: a\n        secret_env: X\n", "cred.yaml:6: tenants.acme.credentials[0].hosts: bind the credential to at least one host"},
		{"empty hosts", "      - name: a\n        secret_env: X\n        hosts: []\n", "cred.yaml:8: tenants.acme.credentials[0].hosts: bind"},
		{"wildcard tld", "      - name: a\n        secret_env: X\n        hosts: [\"*.com\"]\n", `cred.yaml:8: tenants.acme.credentials[0].hosts[0]: bad host pattern "*.com": wider than a registrable domain`},
		{"wildcard star", "      - name: a\n        secret_env: X\n        hosts: [\"*\"]\n", `cred.yaml:8: tenants.acme.credentials[0].hosts[0]`},
		{"wildcard private suffix", "      - name: a\n        secret_env: X\n        hosts: [\"*.github.io\"]\n", `cred.yaml:8: tenants.acme.credentials[0].hosts[0]: "*.github.io": wider than a registrable domain`},
		{"loopback", "      - name: a\n        secret_env: X\n        hosts: [127.0.0.1]\n", "inside the dialer's deny ranges"},
		{"no secret", "      - name: a\n        hosts: [a.example.test]\n", "cred.yaml:6: tenants.acme.credentials[0]: set secret_file or secret_env"},
		{"both secrets", "      - name: a\n        secret_file: f\n" + ok, "tenants.acme.credentials[0].secret_env: set secret_file or secret_env, not both"},
		{"secret literal key", "      - name: a\n        secret: ghp_x\n" + ok, `cred.yaml:7: tenants.acme.credentials[0].secret: unknown key "secret"`},
		{"bad name", "      - name: A b\n" + ok, `tenants.acme.credentials[0].name: bad credential name "A b"`},
		{"duplicate", "      - name: a\n" + ok + "      - name: a\n" + ok, "cred.yaml:9: tenants.acme.credentials[1].name: credential \"a\" is already defined"},
		{"inject", "      - name: a\n" + ok + "        inject: cookie\n", `cred.yaml:9: tenants.acme.credentials[0].inject: got "cookie"`},
		{"header missing", "      - name: a\n" + ok + "        inject: header\n", "tenants.acme.credentials[0].header: inject: header needs"},
		{"header proxy", "      - name: a\n" + ok + "        inject: header\n        header: Proxy-Authorization\n", "Proxy-Authorization never travels upstream"},
		{"query missing", "      - name: a\n" + ok + "        inject: query\n", "tenants.acme.credentials[0].query: inject: query needs"},
		{"user without basic", "      - name: a\n" + ok + "        user: x\n", "tenants.acme.credentials[0].user: only with inject: basic"},
		{"env reserved", "      - name: a\n" + ok + "        env: [HTTPS_PROXY]\n", "tenants.acme.credentials[0].env[0]: HTTPS_PROXY is set by the export"},
		{"env twice", "      - name: a\n" + ok + "        env: [T]\n      - name: b\n" + ok + "        env: [T]\n", "tenants.acme.credentials[1].env[0]: T already carries"},
		{"short", "      - name: a\n" + ok + "        prefix: ghp_\n        length: 10\n", "tenants.acme.credentials[0].length: got 10"},
		{"format and prefix", "      - name: a\n" + ok + "        format: github-pat\n        prefix: x\n", "set format, or prefix and length, not both"},
		{"port", "      - name: a\n" + ok + "        ports: [0]\n", "tenants.acme.credentials[0].ports[0]: port 0"},
		{"path", "      - name: a\n" + ok + "        paths: [v1]\n", "tenants.acme.credentials[0].paths[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(credBase+tc.yaml), "cred.yaml")
			if err == nil {
				err = c.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
		})
	}
}
