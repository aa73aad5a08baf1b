package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/internal/stepcatest"
)

// handshake CONNECTs through proxy as tenant acme and completes TLS with
// the gateway's leaf for host, trusting root alone.
func handshake(proxy, token, host string, root *x509.Certificate) error {
	c, err := net.DialTimeout("tcp", proxy, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\nProxy-Authorization: Basic %s\r\n\r\n", host, host,
		base64.StdEncoding.EncodeToString([]byte("acme:"+token)))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("CONNECT: %s", resp.Status)
	}
	pool := x509.NewCertPool()
	pool.AddCert(root)
	tc := tls.Client(c, &tls.Config{ServerName: host, RootCAs: pool})
	return tc.Handshake()
}

// TestReplicasTakeIntermediatesFromStepCA: two replicas, the tenant root in
// a real step-ca. Sandboxes trust the root whichever replica they reach; the
// replicas renew their short-lived intermediates; with step-ca gone, each
// fails closed when its intermediate expires: not ready, and no handshake.
func TestReplicasTakeIntermediatesFromStepCA(t *testing.T) {
	sca := stepcatest.Start(t, stepcatest.Options{Permitted: []string{"example.test"}})
	dir := t.TempDir()
	mustWriteFile(t, filepath.Join(dir, "root.pem"), string(sca.RootPEM()))
	mustWriteFile(t, filepath.Join(dir, "provisioner.pem"), string(sca.KeyPEM()))
	const ttl = 4 * time.Second
	w := newReplicaWorldIn(t, 2, dir, fmt.Sprintf(`
    step_ca:
      url: %s
      root_file: root.pem
      provisioner: %s
      provisioner_key_file: provisioner.pem
      intermediate_ttl: %s`, sca.URL, sca.Provisioner, ttl))
	tok := strings.TrimSpace(readFile(t, filepath.Join(dir, "acme.token")))
	for i, s := range w.replicas {
		a, err := s.cas.Authority("acme")
		if err != nil {
			t.Fatal(err)
		}
		if string(a.CertPEM()) != string(sca.RootPEM()) {
			t.Errorf("replica %d exports a trust anchor other than the tenant root", i)
		}
		if err := handshake(s.ProxyAddr(), tok, "api.example.test", sca.Root); err != nil {
			t.Fatalf("replica %d: a sandbox trusting the tenant root: %v", i, err)
		}
	}
	first, _ := w.replicas[0].cas.Authority("acme")
	_, until := first.Issued()
	time.Sleep(time.Until(until) + 500*time.Millisecond)
	for i, s := range w.replicas {
		if err := s.ready(context.Background()); err != nil {
			t.Fatalf("replica %d: not ready after its first intermediate's lifetime: not renewed? %v", i, err)
		}
		if err := handshake(s.ProxyAddr(), tok, "api.example.test", sca.Root); err != nil {
			t.Fatalf("replica %d after renewal: %v", i, err)
		}
	}

	sca.Stop()
	var latest time.Time
	for _, s := range w.replicas {
		a, err := s.cas.Authority("acme")
		if err != nil {
			t.Fatal(err)
		}
		_, u := a.Issued()
		if u.After(latest) {
			latest = u
		}
	}
	time.Sleep(time.Until(latest) + 200*time.Millisecond)
	for i, s := range w.replicas {
		if err := s.ready(context.Background()); err == nil || !strings.Contains(err.Error(), "CA unavailable") {
			t.Errorf("replica %d with its intermediate expired: ready %v, want not ready", i, err)
		}
		if err := handshake(s.ProxyAddr(), tok, "api.example.test", sca.Root); err == nil {
			t.Errorf("replica %d completed a handshake with an expired intermediate", i)
		}
	}
}
