package main

import (
	"fmt"
	"io"
	"net"
	"path/filepath"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/internal/trust"
)

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
	store, err := trust.Open(cfg)
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
	envPath, _, _, err := trust.Export(cfg, store, *tenant, outDir, hostport, *containerDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s, %s and %s\n", filepath.Join(outDir, "ca.pem"), filepath.Join(outDir, "bundle.pem"), envPath)
	return nil
}
