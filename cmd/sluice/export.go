package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"time"

	"github.com/sluice-egress/sluice/ca"
	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/credentials"
)

// exportTenant writes ca.pem, bundle.pem and sluice.env (ca.Authority.ExportEnv)
// for one tenant into outDir, with the tenant's token and phantom credentials.
// containerDir, when set, is where the container will see outDir mounted.
func exportTenant(cfg *config.Config, store *ca.Store, tenant, outDir, proxyHostport, containerDir string) (envPath string, lines []string, token string, err error) {
	auth, err := store.Authority(tenant)
	if err != nil {
		return "", nil, "", err
	}
	if token, err = cfg.Token(tenant); err != nil {
		return "", nil, "", fmt.Errorf("tenant %s: %w", tenant, err)
	}
	// The tenant's phantom credentials, under the names its tools read.
	phantoms, err := credentials.TenantEnv(cfg, tenant)
	if err != nil {
		return "", nil, "", err
	}
	envPath, lines, err = auth.ExportEnv(outDir, containerDir, &url.URL{Scheme: "http", User: url.UserPassword(tenant, token), Host: proxyHostport}, phantoms)
	return envPath, lines, token, err
}

// caStore opens the CA store under the data dir with the configured
// passphrase.
func caStore(cfg *config.Config) (*ca.Store, error) {
	s := &ca.Store{Dir: filepath.Join(cfg.DataDir, "ca"), LeafTTL: time.Duration(cfg.CA.LeafTTL)}
	var err error
	if s.Issuers, err = stepCAIssuers(cfg); err != nil {
		return nil, err
	}
	if s.Passphrase, err = cfg.CAPassphrase(); err != nil {
		return nil, err
	}
	return s, nil
}

// reachableProxy turns a listen address into one a client can use: an
// unspecified host (0.0.0.0, ::) becomes loopback.
func reachableProxy(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func runCAExport(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ca export", stderr)
	cfgPath := fs.String("config", "", "config file (default: the embedded default)")
	dataDir := fs.String("data-dir", "", "data directory (overrides data_dir)")
	tenant := fs.String("tenant", "", "tenant whose trust files to export (required)")
	out := fs.String("out", "", "directory to write ca.pem, bundle.pem and sluice.env into (required)")
	proxy := fs.String("proxy", "", "host:port of the gateway as the container reaches it (default: listen.proxy)")
	containerDir := fs.String("container-dir", "", "where the container sees --out mounted (default: --out itself)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *tenant == "" || *out == "" {
		return fmt.Errorf("%w: --tenant and --out are required", errUsage)
	}
	cfg, err := config.Open(*cfgPath, *dataDir)
	if err != nil {
		return err
	}
	store, err := caStore(cfg)
	if err != nil {
		return err
	}
	hostport := *proxy
	if hostport == "" {
		hostport = reachableProxy(cfg.Listen.Proxy)
	}
	outDir, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	envPath, _, _, err := exportTenant(cfg, store, *tenant, outDir, hostport, *containerDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s, %s and %s\n", filepath.Join(outDir, "ca.pem"), filepath.Join(outDir, "bundle.pem"), envPath)
	return nil
}
