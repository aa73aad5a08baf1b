package e2e

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// loopbackGateway is the real binary on its embedded default, on loopback
// ports chosen by the kernel.
type loopbackGateway struct {
	*sluiceProc
	dataDir string
	proxy   string // host:port
	admin   string // http://host:port
	token   string
}

var (
	proxyOn = regexp.MustCompile(`proxy on http://(\S+)`)
	adminOn = regexp.MustCompile(`admin on (http://\S+)`)
)

func startLoopback(t *testing.T) *loopbackGateway {
	t.Helper()
	g := &loopbackGateway{dataDir: t.TempDir()}
	g.sluiceProc = startSluice(t, nil, "admin on", "serve", "--data-dir", g.dataDir, "--proxy", "127.0.0.1:0", "--admin", "127.0.0.1:0")
	for _, l := range g.lines {
		if m := proxyOn.FindStringSubmatch(l); m != nil {
			g.proxy = m[1]
		}
		if m := adminOn.FindStringSubmatch(l); m != nil {
			g.admin = m[1]
		}
	}
	if g.proxy == "" || g.admin == "" {
		t.Fatalf("gateway did not announce its proxy and admin URLs:\n%s", g.stderr.String())
	}
	tok, err := os.ReadFile(filepath.Join(g.dataDir, "default.token"))
	if err != nil {
		t.Fatal(err)
	}
	g.token = strings.TrimSpace(string(tok))
	return g
}

// get sends a plain-HTTP request through the proxy with the given proxy
// password and extra headers; it returns the status and Sluice-Incident.
func (g *loopbackGateway) get(t *testing.T, password, target string, hdr map[string]string) (int, string) {
	t.Helper()
	proxy := &url.URL{Scheme: "http", Host: g.proxy, User: url.UserPassword("default", password)}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(proxy), DisableKeepAlives: true}}
	req, err := http.NewRequest("GET", target, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Sluice-Incident")
}

func (g *loopbackGateway) scrape(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(g.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// fakeSecret returns prefix followed by n random characters of alphabet:
// made at test time, so no real secret and no fixed string a build could
// special-case.
func fakeSecret(t *testing.T, prefix string, n int, alphabet string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for range n {
		i, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteByte(alphabet[i.Int64()])
	}
	return b.String()
}

const (
	alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
)

// TestNoSecretAtRest sends fake secrets in the URL path, the query string,
// headers and the proxy password of refused requests, and then looks for
// each of them in the database, its WAL and shared memory files, and the
// gateway's log: none may be there. The incidents themselves must be.
func TestNoSecretAtRest(t *testing.T) {
	g := startLoopback(t)
	secrets := map[string]string{
		"path":           fakeSecret(t, "ghp_", 36, alnum),
		"letters path":   fakeSecret(t, "ghp_", 36, alnum[:52]), // no digit: only the rules know it
		"query":          fakeSecret(t, "ghp_", 36, alnum),
		"header":         fakeSecret(t, "ghp_", 36, alnum),
		"aws header":     fakeSecret(t, "AKIA", 16, upper),
		"proxy password": fakeSecret(t, "ghp_", 36, alnum),
	}
	var ids []string
	check := func(name string, code int, id string) {
		if code != http.StatusForbidden || id == "" {
			t.Fatalf("%s: status %d, incident %q; want 403 with an incident", name, code, id)
		}
		ids = append(ids, id)
	}
	code, id := g.get(t, g.token, "http://denied.example.test/repos/"+secrets["path"]+"/contents", nil)
	check("path", code, id)
	code, id = g.get(t, g.token, "http://denied.example.test/repos/"+secrets["letters path"]+"/contents", nil)
	check("letters path", code, id)
	code, id = g.get(t, g.token, "http://denied.example.test/q?access_token="+secrets["query"], nil)
	check("query", code, id)
	code, id = g.get(t, g.token, "http://denied.example.test/h", map[string]string{
		"Authorization": "Bearer " + secrets["header"], "X-Api-Key": secrets["aws header"]})
	check("headers", code, id)
	if code, _ := g.get(t, secrets["proxy password"], "http://denied.example.test/", nil); code != http.StatusProxyAuthRequired {
		t.Fatalf("wrong proxy password: %d", code)
	}

	dbPath := filepath.Join(g.dataDir, "sluice.db")
	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, id := range ids {
		var path string
		if err := db.QueryRow("SELECT path FROM incidents WHERE id = ?", id).Scan(&path); err != nil {
			t.Fatalf("incident %s not stored: %v", id, err)
		}
		if strings.Contains(path, "?") {
			t.Errorf("incident %s stored a query string: %q", id, path)
		}
		t.Logf("incident %s: path %q", id, path)
	}
	body := g.scrape(t)
	if !strings.Contains(body, `sluice_decisions_total{action="block",reason="host-not-allowed",tenant="default"} 4`) ||
		!strings.Contains(body, `sluice_decisions_total{action="block",reason="proxy-auth-required",tenant="none"} 1`) {
		t.Errorf("decisions not counted:\n%s", grepLines(body, "sluice_decisions"))
	}

	look := func(when string) {
		files, _ := filepath.Glob(dbPath + "*")
		if len(files) < 2 && when == "while running" {
			t.Errorf("%s: want the database and its WAL, found %v", when, files)
		}
		blobs := map[string][]byte{"log": []byte(g.stderr.String()), "metrics": []byte(body)}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			blobs[filepath.Base(f)] = b
		}
		for where, b := range blobs {
			for name, s := range secrets {
				if bytes.Contains(b, []byte(s)) {
					t.Errorf("%s: the %s secret is in %s", when, name, where)
				}
			}
		}
		if !bytes.Contains(blobs["log"], []byte("denied.example.test")) {
			t.Errorf("%s: the log does not show the refusals at all; the search proves nothing", when)
		}
	}
	look("while running")
	g.cmd.Process.Signal(syscall.SIGTERM)
	if exited, _ := g.exitWithin(20 * time.Second); !exited {
		t.Fatal("gateway did not stop on SIGTERM")
	}
	look("after shutdown")
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestAdminEndpoints checks health, readiness and that after traffic the
// metrics moved without a host, a path or a token in any label.
func TestAdminEndpoints(t *testing.T) {
	g := startLoopback(t)
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(g.admin + p)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", p, resp, err)
		}
		resp.Body.Close()
	}
	before := g.scrape(t)
	for range 5 {
		g.get(t, g.token, "http://metrics-host.example.test/some/path", nil)
	}
	after := g.scrape(t)
	if strings.Contains(before, `tenant="default"`) ||
		!strings.Contains(after, `sluice_decisions_total{action="block",reason="host-not-allowed",tenant="default"} 5`) {
		t.Fatalf("decisions did not move:\n%s", grepLines(after, "sluice_decisions"))
	}
	for _, series := range []string{"sluice_store_batch_seconds_count", "sluice_store_queue_depth", "sluice_tunnels_open",
		"sluice_leaf_cache_total", "sluice_upstream_bytes_total", "sluice_policy_reloads_total", "sluice_scan_duration_seconds"} {
		if !strings.Contains(after, series) {
			t.Errorf("/metrics lacks %s", series)
		}
	}
	for _, leak := range []string{"example.test", "/some/path", g.token} {
		if strings.Contains(after, leak) {
			t.Errorf("/metrics contains %q", leak)
		}
	}
}
