package bench

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/gateway/guard"
	"github.com/sluice-egress/sluice/phantom"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// policy is the config: %[1]d is the upstream's port, %[2]d its second port, which is
// passed through blind (the Tunnel path). Resolution is the guard's Resolver's job (every
// name under Domain), so upstream.hosts stays empty. No scanning keys: the scanner runs
// on the defaults; its key and canary file live in data_dir.
const policy = `
version: 1
data_dir: data
tenants:
  bench:
    token_file: bench.token
    classes:
      agent:
        allow:
          - host: bench.example.test
            ports: [%[1]d]
          - host: "*.bench.example.test"
            ports: [%[1]d]
        passthrough:
          - host: bench.example.test
            ports: [%[2]d]
          - host: "*.bench.example.test"
            ports: [%[2]d]
`

// Files of the gateways' directory, written by writeGatewayFiles.
const (
	fileConfig     = "sluice.yaml"
	fileToken      = "bench.token"
	fileUpstreamCA = "upstream-ca.pem"
	dirCA          = "ca"
)

// writeGatewayFiles writes what the gateways start from into e.dir (the policy, with
// tls.sandbox_key_exchange set to kex unless it is empty, the token, the upstream's
// CA) and creates the tenant CA, which the clients trust.
func (e *Env) writeGatewayFiles(kex string) error {
	tok, err := rules.NewToken()
	if err != nil {
		return fmt.Errorf("bench: token: %w", err)
	}
	e.token = tok
	files := []struct {
		name string
		data []byte
	}{
		{fileToken, []byte(tok + "\n")},
		{fileConfig, withKeyExchange(fmt.Appendf(nil, policy, e.port, e.tunnelPort), kex)},
		{fileUpstreamCA, e.pemUpstreamCA},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(e.dir, f.name), f.data, 0o600); err != nil {
			return fmt.Errorf("bench: %s: %w", f.name, err)
		}
	}
	cas := &ca.Store{Dir: filepath.Join(e.dir, dirCA), Logger: slog.New(slog.DiscardHandler)}
	auth, err := cas.Authority(Tenant)
	if err != nil {
		return fmt.Errorf("bench: tenant CA: %w", err)
	}
	e.tenantCAs = x509.NewCertPool()
	e.tenantCAs.AddCert(auth.Certificate())
	return nil
}

// withKeyExchange appends the tls: section that sets kex to the config conf; an empty
// kex leaves conf as it is. Load checks the value.
func withKeyExchange(conf []byte, kex string) []byte {
	if kex == "" {
		return conf
	}
	return fmt.Appendf(conf, "tls:\n  sandbox_key_exchange: %q\n", kex)
}

// serveGateways runs both gateways in this process.
func (e *Env) serveGateways() error {
	gw, gwScan, err := newGateways(e.dir)
	if err != nil {
		return err
	}
	e.gw, e.gwScan = gw, gwScan
	if e.ProxyAddr, err = serve(e.gw); err != nil {
		return err
	}
	e.ScanProxyAddr, err = serve(e.gwScan)
	return err
}

// newGateways builds the two gateways from the files in dir: the plain one and the one
// that scans every request as `sluice serve` does.
func newGateways(dir string) (gw, gwScan *gateway.Gateway, err error) {
	cfg, err := config.Load(filepath.Join(dir, fileConfig))
	if err != nil {
		return nil, nil, fmt.Errorf("bench: load policy: %w", err)
	}
	engine, err := rules.Compile(cfg.Policy(), cfg.Token)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: compile policy: %w", err)
	}
	upPEM, err := os.ReadFile(filepath.Join(dir, fileUpstreamCA))
	if err != nil {
		return nil, nil, fmt.Errorf("bench: upstream CA: %w", err)
	}
	upRoots := x509.NewCertPool()
	if !upRoots.AppendCertsFromPEM(upPEM) {
		return nil, nil, fmt.Errorf("bench: %s holds no certificate", fileUpstreamCA)
	}
	quiet := slog.New(slog.DiscardHandler)
	cas := &ca.Store{Dir: filepath.Join(dir, dirCA), Logger: quiet}
	loopback := netip.MustParseAddr("127.0.0.1")
	newGateway := func() *gateway.Gateway {
		return &gateway.Gateway{
			Policy: engine,
			Leaf: func(tenant, host string) (*tls.Certificate, error) {
				a, err := cas.Authority(tenant)
				if err != nil {
					return nil, err
				}
				return a.Leaf(host)
			},
			Dialer: &guard.Dialer{
				Resolver: domainResolver{addr: loopback},
				// The upstream lives on loopback: take loopback out of the deny ranges (and
				// out of the gateway's own addresses), and leave every other range denied.
				Deny: withoutLoopback(guard.DefaultDeny()),
				Self: func() []netip.Addr { return nil },
			},
			RootCAs: upRoots,
			// As gatewayconf does for sluice serve.
			SandboxCurves: cfg.TLS.SandboxCurves(),
			Logger:        quiet,
			// Every client is 127.0.0.1 and one tenant: the idle-tunnel measurement
			// holds thousands of tunnels open at once.
			Limits: gateway.Limits{MaxConnsPerClient: maxIdleGateway + 256, MaxConnsPerTenant: maxIdleGateway + 256},
			// The idle tunnels must outlive the longest -idle-settle (the default is 2 minutes).
			IdleTimeout: MaxIdleSettle + time.Minute,
		}
	}
	gw = newGateway()
	sc, err := newScanner(cfg)
	if err != nil {
		return nil, nil, err
	}
	// As `sluice serve` does (openCredentials): a phantom registry in the data directory,
	// here with no credentials, is both the scanner's PhantomSet and the gateway's swap.
	reg := &phantom.Registry{Dir: cfg.DataPath(), Key: sc.Key}
	sc.Phantoms = reg
	gwScan = newGateway()
	gwScan.Scanner = sc
	gwScan.Credentials = reg
	return gw, gwScan, nil
}

// serve starts gw on a loopback port and returns its address.
func serve(gw *gateway.Gateway) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("bench: proxy listener: %w", err)
	}
	go gw.Serve(l)
	return l.Addr().String(), nil
}

// newScanner builds the scanner with scanner.Build, as cmd/sluice does for cfg: the shipped rule
// packs compiled once, the scanning policy, a fingerprint key created in the data
// directory and the canaries kept there. It refuses scanning keys that it does not
// reproduce (rule packs, actions, bindings, per-tenant overrides): the bench policy sets none.
func newScanner(cfg *config.Config) (*scanner.Scanner, error) {
	s := cfg.Scanning
	if len(s.RulePacks) > 0 || len(s.Actions) > 0 || len(s.Bindings) > 0 || len(s.Tenants) > 0 {
		return nil, errors.New("bench: the bench policy must not set scanning rule packs, actions, bindings or tenants")
	}
	sc, err := scanner.Build(scanner.Options{
		Policy: scanner.Policy{
			Actions:           map[string]scanner.Action{},
			NoDefaultBindings: s.NoDefaultBindings,
			ForwardOversize:   s.ForwardsOversize(),
		},
		DataDir:      cfg.DataPath(),
		CreateKey:    true,
		MaxBodyBytes: int64(s.MaxBodyBytes),
		DecodeDepth:  s.DecodeDepth,
		Timeout:      time.Duration(s.Timeout),
	})
	if err != nil {
		return nil, fmt.Errorf("bench: scanner: %w", err)
	}
	return sc, nil
}

func withoutLoopback(ps []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range ps {
		if p.Contains(netip.MustParseAddr("127.0.0.1")) || p.Contains(netip.IPv6Loopback()) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// inDomain reports whether host is Domain or a name under it.
func inDomain(host string) bool { return host == Domain || strings.HasSuffix(host, "."+Domain) }
