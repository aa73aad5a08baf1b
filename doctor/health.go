package doctor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
)

// Health is the gateway's container health check (an image from scratch has
// no shell): the proxy at proxyAddr must answer an unauthenticated CONNECT
// with 407, and the admin listener's /healthz at adminAddr, where it answers,
// must say 200. An empty adminAddr skips the second probe.
func Health(ctx context.Context, proxyAddr, adminAddr string) error {
	if err := probeProxy(ctx, proxyAddr); err != nil {
		return fmt.Errorf("healthcheck: proxy %s: %w", proxyAddr, err)
	}
	if adminAddr != "" {
		if err := probeHealthz(ctx, adminAddr); err != nil {
			return fmt.Errorf("healthcheck: admin %s: %w", adminAddr, err)
		}
	}
	return nil
}

func probeProxy(ctx context.Context, addr string) error {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	io.WriteString(c, "CONNECT sluice-healthcheck.invalid:443 HTTP/1.1\r\nHost: sluice-healthcheck.invalid:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusProxyAuthRequired {
		return fmt.Errorf("unauthenticated CONNECT answered %s, want 407", resp.Status)
	}
	return nil
}

// probeHealthz: a refused connection or a 404 means there is no admin
// health endpoint (yet), which is not a failure of the proxy.
func probeHealthz(ctx context.Context, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	if err != nil {
		return err
	}
	tr := &http.Transport{Proxy: nil}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "dial" {
			return nil
		}
		return err
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNotFound {
		return nil
	}
	return fmt.Errorf("/healthz answered %s", resp.Status)
}

// Ready is the readiness check of a replica: the admin listener's /readyz
// at adminAddr must answer 200 (policy, CAs, store and, on a shared store,
// agreement with the peers). Unlike Health, an admin listener that does not
// answer fails it: readiness is not assumed.
func Ready(ctx context.Context, adminAddr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+adminAddr+"/readyz", nil)
	if err != nil {
		return err
	}
	tr := &http.Transport{Proxy: nil}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("readiness: admin %s: %w", adminAddr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("readiness: /readyz answered %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return nil
}
