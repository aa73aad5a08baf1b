package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/doctor"
)

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func runDoctor(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("doctor", stderr)
	proxy := fs.String("proxy", "", "proxy URL with credentials (default: HTTPS_PROXY, as sluice.env sets it)")
	control := fs.String("control", getenv("SLUICE_DOCTOR_CONTROL"), "an https URL the policy allows (default: SLUICE_DOCTOR_CONTROL)")
	denied := fs.String("denied", "", "a host the policy refuses (default: "+doctor.DeniedHost+")")
	private := fs.String("private", "", "a private address the gateway must refuse (default: 10.0.0.1)")
	caFile := fs.String("ca", getenv("NODE_EXTRA_CA_CERTS"), "the tenant CA (ca.pem) the control host's leaf must come from (default: NODE_EXTRA_CA_CERTS, as sluice.env sets it)")
	timeout := fs.Duration("timeout", 5*time.Second, "timeout of each probe")
	routes := fs.String("routes", "/proc/net/route", "IPv4 route table to find the bridge gateway in")
	transparent := fs.Bool("transparent", getenv("SLUICE_MODE") == "transparent", "the sandbox has no proxy: its resolver and network send it to the gateway (default: SLUICE_MODE=transparent)")
	resolvConf := fs.String("resolv-conf", "/etc/resolv.conf", "the sandbox's resolver configuration")
	metadata := fs.String("metadata", "169.254.169.254", "the cloud metadata address a direct connection must not reach")
	gatewayName := fs.String("gateway-name", "sluice.internal", "a name only Sluice's resolver answers (dns.names)")
	var direct, outside, resolvers listFlag
	fs.Var(&resolvers, "resolver", "host:port of a resolver the sandbox can reach (repeatable; default: the nameservers of --resolv-conf)")
	fs.Var(&direct, "direct", "host:port that a connection around the proxy must not reach (repeatable)")
	fs.Var(&outside, "outside", "an internet address that answers on TCP 80/443, UDP 53 and QUIC, tried around the proxy (repeatable; default: "+strings.Join(doctor.DefaultOutside, ", ")+"; \"none\" for none)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	d := doctor.Doctor{Denied: *denied, Private: *private, Direct: direct, Timeout: *timeout,
		CertFile: getenv("SSL_CERT_FILE"), RouteFile: *routes, Transparent: *transparent,
		ResolvConf: *resolvConf, GatewayName: *gatewayName, Metadata: *metadata}
	if len(resolvers) > 0 {
		d.Resolvers = resolvers
	}
	switch {
	case len(outside) == 1 && outside[0] == "none":
		d.Outside = []string{}
	case len(outside) > 0:
		d.Outside = outside
	}
	raw := *proxy
	if raw == "" && !d.Transparent {
		raw = doctor.ProxyFromEnv(getenv)
	}
	if raw != "" {
		u, err := url.Parse(doctor.ProxyURL(raw))
		if err != nil {
			return fmt.Errorf("%w: proxy URL does not parse", errUsage) // the URL may hold a token: not echoed
		}
		d.Proxy = u
	}
	if *control != "" {
		u, err := url.Parse(*control)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("%w: --control %q: want an https URL", errUsage, *control)
		}
		d.Control = u
	}
	if *caFile != "" {
		c, err := doctor.ReadCert(*caFile)
		if err != nil {
			return fmt.Errorf("tenant CA: %w", err)
		}
		d.TenantCA = c
	}
	return doctor.Report(d.Run(ctx), stdout)
}

// runHealthcheck is the container health check (an image from scratch has
// no shell): the proxy must answer an unauthenticated CONNECT with 407, and
// the admin listener's /healthz, where it answers, must say 200.
func runHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("healthcheck", stderr)
	proxy := fs.String("proxy", "127.0.0.1:3128", "proxy address to probe")
	admin := fs.String("admin", "127.0.0.1:8080", "admin address whose /healthz to probe where it listens (empty: skip)")
	timeout := fs.Duration("timeout", 3*time.Second, "overall timeout")
	ready := fs.Bool("ready", false, "also require /readyz on --admin to answer 200 (a readiness probe)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := doctor.Health(ctx, *proxy, *admin); err != nil {
		return err
	}
	if *ready {
		if err := doctor.Ready(ctx, *admin); err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}
