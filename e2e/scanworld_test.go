package e2e

import (
	"crypto/x509"
	"net/http"
	"testing"

	"github.com/sluice-egress/sluice/internal/testnet"
)

// scanPolicy allows two hosts; the scanner redacts AWS key ids, blocks
// everything else it finds, and binds GitLab tokens to api.example.test.
const scanPolicy = `
version: 1
listen:
  proxy: 192.0.2.1:3128
data_dir: data
upstream:
  extra_roots: [upstream-ca.pem]
  hosts:
    api.example.test: 198.51.100.10
    other.example.test: 203.0.113.10
scanning:
  max_body_bytes: 1MiB
  actions:
    aws-access-token: redact
  bindings:
    - rule: gitlab-pat
      hosts: [api.example.test]
tenants:
  acme:
    token_file: acme.token
    classes:
      agent:
        allow:
          - host: api.example.test
          - host: other.example.test
`

// scanEnv is a running gateway with a scanner between a sandbox and two
// recording upstreams.
type scanEnv struct {
	*fixture
	api   *testnet.Upstream
	other *testnet.Upstream
	roots *x509.CertPool
}

func startScan(t *testing.T) *scanEnv {
	e := &scanEnv{fixture: newFixture(t, scanPolicy, "acme")}
	e.api = e.w.ServeUpstream(t, testnet.HostPort(apiAddr, 443), e.upCA.ServerTLS(t, "api.example.test"), nil)
	e.other = e.w.ServeUpstream(t, testnet.HostPort(otherAddr, 443), e.upCA.ServerTLS(t, "other.example.test"), nil)
	e.serve(t, "2s")
	e.roots = trustRoots(t, e.exportTrust(t, "acme"))
	return e
}

// client is a Go client in the sandbox, proxied as tenant acme.
func (e *scanEnv) client(t *testing.T) *http.Client {
	return e.sandboxClient(t, "acme", e.token, e.roots)
}
