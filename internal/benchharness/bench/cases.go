package bench

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// Case is one measurement, made the same way via either path.
type Case struct {
	// Name is the case's short name, usable as a sub-benchmark name.
	Name string
	// Desc says in a few words what one operation is.
	Desc string
	// Bytes is the body size one operation moves; zero for the request-rate cases.
	Bytes int64
	// Run measures the case via v, one request per b.Loop iteration. Setup (client,
	// a first request that opens the connection or warms the leaf cache) is not timed.
	Run func(b *testing.B, e *Env, v Via)
}

// Cases returns the cases in the order the harness prints them.
func Cases() []Case {
	return []Case{
		{
			Name: "small-get", Desc: "GET of a 3-byte body on a kept-alive connection",
			Run: func(b *testing.B, e *Env, v Via) {
				c := e.Client(v, true)
				defer c.CloseIdleConnections()
				loop(b, e, func() error { return getSmall(c, e.URL(Domain, pathSmall)) })
			},
		},
		{
			Name: "upload-1MiB", Desc: "POST of a 1 MiB body on a kept-alive connection", Bytes: BodySize,
			Run: func(b *testing.B, e *Env, v Via) {
				c := e.Client(v, true)
				defer c.CloseIdleConnections()
				body := make([]byte, BodySize)
				loop(b, e, func() error { return upload(c, e.URL(Domain, pathUpload), body) })
			},
		},
		{
			Name: "download-1MiB", Desc: "GET of a 1 MiB body on a kept-alive connection", Bytes: BodySize,
			Run: func(b *testing.B, e *Env, v Via) {
				c := e.Client(v, true)
				defer c.CloseIdleConnections()
				loop(b, e, func() error { return download(c, e.URL(Domain, pathDownload)) })
			},
		},
		{
			Name: "newconn-warm", Desc: "small GET on a new TLS connection, same host (gateway leaf cached, upstream connection pooled)",
			Run: func(b *testing.B, e *Env, v Via) {
				c := e.Client(v, false)
				loop(b, e, func() error { return getSmall(c, e.URL(Domain, pathSmall)) })
			},
		},
		{
			Name: "newconn-cold", Desc: "small GET on a new TLS connection, new host each time (gateway mints a leaf and dials upstream anew)",
			Run: func(b *testing.B, e *Env, v Via) {
				c := e.Client(v, false)
				// The first request is not timed; every timed one names a host never seen.
				first := true
				loop(b, e, func() error {
					host := Domain
					if !first {
						host = e.ColdHost()
					}
					first = false
					return getSmall(c, e.URL(host, pathSmall))
				})
			},
		},
	}
}

// loop runs op once untimed (opening the connection, warming caches), then once per
// b.Loop iteration; it stops the benchmark at the first error.
func loop(b *testing.B, e *Env, op func() error) {
	b.Helper()
	if err := op(); err != nil {
		err = fmt.Errorf("%s: first request: %w", b.Name(), err)
		e.fail(err)
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := op(); err != nil {
			err = fmt.Errorf("%s: %w", b.Name(), err)
			e.fail(err)
			b.Fatal(err)
		}
	}
}

func getSmall(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	return drain(resp, int64(len(smallBody)))
}

func upload(c *http.Client, url string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	return drain(resp, int64(len(smallBody)))
}

func download(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	return drain(resp, BodySize)
}

// drain reads and closes the body, and checks the status and the body's length.
func drain(resp *http.Response, want int64) error {
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch {
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("%s %s: status %s (Sluice-Reason %q)", resp.Request.Method, resp.Request.URL, resp.Status, resp.Header.Get("Sluice-Reason"))
	case err != nil:
		return fmt.Errorf("%s %s: read body: %w", resp.Request.Method, resp.Request.URL, err)
	case n != want:
		return fmt.Errorf("%s %s: body of %d bytes, want %d", resp.Request.Method, resp.Request.URL, n, want)
	}
	return nil
}

// Check makes each kind of request once via each path and verifies that it went the way
// it was meant to: a direct answer carries the upstream's certificate, an answer through
// the gateway the tenant CA's leaf for the very host asked for, and a host outside the
// policy is refused by the gateway. The harness runs it before measuring anything.
func Check(e *Env) error {
	var errs []error
	for _, v := range []Via{Direct, Gateway} {
		c := e.Client(v, true)
		errs = append(errs,
			getSmall(c, e.URL(Domain, pathSmall)),
			upload(c, e.URL(Domain, pathUpload), make([]byte, BodySize)),
			download(c, e.URL(Domain, pathDownload)),
		)
		host := e.ColdHost()
		resp, err := c.Get(e.URL(host, pathSmall))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", v, err))
			continue
		}
		errs = append(errs, drain(resp, int64(len(smallBody))))
		errs = append(errs, checkPeer(resp, v, e, host))
		c.CloseIdleConnections()
	}
	// The policy allows only names under Domain: the gateway must refuse another one.
	resp, err := e.Client(Gateway, false).Get("https://other.example.test/")
	if err == nil {
		resp.Body.Close()
		errs = append(errs, fmt.Errorf("gateway let a request to other.example.test through: %s", resp.Status))
	}
	return errors.Join(errs...)
}

// checkPeer verifies whose certificate answered: the upstream's (for *.Domain) directly,
// the tenant CA's leaf for exactly host through the gateway.
func checkPeer(resp *http.Response, v Via, e *Env, host string) error {
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		return fmt.Errorf("%s: no TLS peer certificate", v)
	}
	leaf := resp.TLS.PeerCertificates[0]
	roots := e.upRoots
	if v == Gateway {
		roots = e.tenantCAs
		if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != host {
			return fmt.Errorf("gateway: leaf names %v, want exactly %s", leaf.DNSNames, host)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
		return fmt.Errorf("%s: peer certificate: %w", v, err)
	}
	return nil
}
