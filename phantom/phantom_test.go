package phantom

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/sluice-egress/sluice/scanner"
)

// fixed is a Source with a set value.
type fixed string

func (f fixed) Secret() (string, error) { return string(f), nil }

func mustFake(t testing.TB, kind string) string {
	t.Helper()
	v, err := scanner.FakeSecret(kind)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func testCreds(real string) map[string][]*Credential {
	return map[string][]*Credential{"acme": {
		{Name: "github", Secret: fixed(real), Hosts: []string{"github.test", "*.github.test"}, Placement: Basic,
			Env: []string{"GITHUB_TOKEN", "GH_TOKEN"}, Format: "github-pat"},
		{Name: "model", Secret: fixed(real), Hosts: []string{"api.model.test"}, Placement: Header, Header: "x-api-key",
			Prefix: "sk-ant-", Length: 60},
		{Name: "maps", Secret: fixed(real), Hosts: []string{"maps.test"}, Placement: Query, Query: "key", Paths: []string{"/v1/"}},
		{Name: "api", Secret: fixed(real), Hosts: []string{"api.test"}, Ports: []int{8443}},
	}}
}

func envMap(lines []string) map[string]string {
	m := map[string]string{}
	for _, l := range lines {
		k, v, _ := strings.Cut(l, "=")
		m[k] = v
	}
	return m
}

func TestMintShapesPersistsAndForgets(t *testing.T) {
	dir := t.TempDir()
	real := mustFake(t, "github-pat")
	key := []byte("0123456789abcdef0123456789abcdef")
	r := &Registry{Dir: dir, Key: key, Credentials: testCreds(real)}
	tenantEnv, err := r.Mint("acme", "")
	if err != nil {
		t.Fatal(err)
	}
	runEnv, err := r.Mint("acme", "run-1")
	if err != nil {
		t.Fatal(err)
	}
	te, re := envMap(tenantEnv), envMap(runEnv)
	if len(te) != 5 || te["GITHUB_TOKEN"] != te["GH_TOKEN"] {
		t.Fatalf("env = %q", tenantEnv)
	}
	gh, model, maps := te["GITHUB_TOKEN"], te["SLUICE_PHANTOM_MODEL"], te["SLUICE_PHANTOM_MAPS"]
	if !strings.HasPrefix(gh, "ghp_") || len(gh) != 40 || !strings.HasPrefix(model, "sk-ant-") || len(model) != 60 || len(maps) != DefaultLength {
		t.Errorf("phantoms not in shape: %d %d %d", len(gh), len(model), len(maps))
	}
	for k, v := range te {
		if v == real || re[k] == v {
			t.Errorf("%s: phantom is the real secret or shared between runs", k)
		}
	}
	// The file: 0600, phantoms and fingerprints, never the real secret.
	st, err := os.Stat(filepath.Join(dir, StoreFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("store file: %v %v", st, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, StoreFile))
	if bytes.Contains(b, []byte(real)) || !bytes.Contains(b, []byte(gh)) || !bytes.Contains(b, []byte(scanner.Fingerprint(key, gh))) {
		t.Error("store file must hold phantoms and fingerprints, not the real secret")
	}
	// A restart: the same phantoms, recognised by fingerprint.
	r2 := &Registry{Dir: dir, Key: key, Credentials: testCreds(real)}
	again, err := r2.Mint("acme", "")
	if err != nil || strings.Join(again, ",") != strings.Join(tenantEnv, ",") {
		t.Fatalf("after restart: %q %v", again, err)
	}
	if name, ok := r2.Phantom(scanner.Fingerprint(key, re["GITHUB_TOKEN"])); !ok || name != "github" {
		t.Errorf("run phantom not recognised after restart: %q %v", name, ok)
	}
	if len(r2.Uses("acme", "run-1")) != 4 {
		t.Errorf("uses of run-1 after restart: %d", len(r2.Uses("acme", "run-1")))
	}
	if err := r2.Forget("acme", "run-1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := r2.Phantom(scanner.Fingerprint(key, re["GITHUB_TOKEN"])); ok || r2.Uses("acme", "run-1") != nil {
		t.Error("a forgotten run's phantom is still known")
	}
	if _, ok := r2.Phantom(scanner.Fingerprint(key, gh)); !ok {
		t.Error("forgetting a run dropped the tenant's phantom")
	}
	if !r2.Lengths()[40] {
		t.Errorf("Lengths = %v", r2.Lengths())
	}
}

func TestMintRunCredentials(t *testing.T) {
	r := &Registry{}
	env, err := r.Mint("acme", "run-1", &Credential{Name: "npm", Secret: fixed("x"), Hosts: []string{"npm.test"}, Env: []string{"NPM_TOKEN"}, Prefix: "npm_", Length: 40})
	if err != nil || len(env) != 1 || !strings.HasPrefix(env[0], "NPM_TOKEN=npm_") {
		t.Fatalf("env = %q, %v", env, err)
	}
	if _, err := r.Mint("acme", "run-2", &Credential{Name: "bad", Secret: fixed("x")}); err == nil {
		t.Error("a run credential bound to no host was accepted")
	}
}

func useOf(t *testing.T, r *Registry, name string) *Use {
	t.Helper()
	for _, u := range r.Uses("acme", "run-1") {
		if u.Credential.Name == name {
			return u
		}
	}
	t.Fatalf("no use %s", name)
	return nil
}

func TestInjectOnlyInPlace(t *testing.T) {
	real := mustFake(t, "github-pat")
	r := &Registry{Credentials: testCreds(real)}
	if _, err := r.Mint("acme", "run-1"); err != nil {
		t.Fatal(err)
	}
	gh, model, maps, api := useOf(t, r, "github"), useOf(t, r, "model"), useOf(t, r, "maps"), useOf(t, r, "api")
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }

	for _, tc := range []struct {
		name    string
		use     *Use
		url     string
		header  http.Header
		inPlace bool
		check   func(r *http.Request) bool
	}{
		{"basic password", gh, "https://github.test/o/r.git/info/refs", http.Header{"Authorization": {basic("x-access-token", gh.Phantom)}, "X-Other": {"keep"}}, true,
			func(r *http.Request) bool {
				return r.Header.Get("Authorization") == basic("x-access-token", real) && r.Header.Get("X-Other") == "keep"
			}},
		{"basic user", gh, "https://github.test/", http.Header{"Authorization": {basic(gh.Phantom, "")}}, true,
			func(r *http.Request) bool { return r.Header.Get("Authorization") == basic(real, "") }},
		{"basic twice", gh, "https://github.test/", http.Header{"Authorization": {basic(gh.Phantom, gh.Phantom)}}, false, nil},
		{"bearer for basic credential", gh, "https://github.test/", http.Header{"Authorization": {"Bearer " + gh.Phantom}}, false, nil},
		{"header", model, "https://api.model.test/v1/messages", http.Header{"X-Api-Key": {model.Phantom}}, true,
			func(r *http.Request) bool { return r.Header.Get("X-Api-Key") == real }},
		{"header twice", model, "https://api.model.test/", http.Header{"X-Api-Key": {model.Phantom, model.Phantom}}, false, nil},
		{"query", maps, "https://maps.test/v1/geo?a=1&key=" + maps.Phantom + "&z=%2F", nil, true,
			func(r *http.Request) bool { return r.URL.RawQuery == "a=1&key="+real+"&z=%2F" }},
		{"query also in path", maps, "https://maps.test/v1/" + maps.Phantom + "?key=" + maps.Phantom, nil, false, nil},
		{"query in another parameter", maps, "https://maps.test/v1/?key=" + maps.Phantom + "&x=" + maps.Phantom, nil, false, nil},
		{"bearer", api, "https://api.test:8443/", http.Header{"Authorization": {"token " + api.Phantom}}, true,
			func(r *http.Request) bool { return r.Header.Get("Authorization") == "token "+real }},
		{"another run's phantom", api, "https://api.test:8443/", http.Header{"Authorization": {"Bearer sk-not-this-one"}}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", tc.url, nil)
			for k, v := range tc.header {
				req.Header[k] = v
			}
			if got := tc.use.InPlace(req); got != tc.inPlace {
				t.Fatalf("InPlace = %v, want %v", got, tc.inPlace)
			}
			before := req.Header.Clone()
			beforeQ := req.URL.RawQuery
			injected := tc.use.Inject(req, real)
			if injected != tc.inPlace {
				t.Fatalf("Inject = %v", injected)
			}
			if !tc.inPlace {
				if req.URL.RawQuery != beforeQ || len(req.Header) != len(before) || req.Header.Get("Authorization") != before.Get("Authorization") {
					t.Error("a request without the phantom in place was changed")
				}
				return
			}
			if !tc.check(req) {
				t.Errorf("after Inject: header %v query %q", req.Header, req.URL.RawQuery)
			}
		})
	}

	if !gh.Binds("x.github.test", 443, "/") || gh.Binds("github.test", 8443, "/") || gh.Binds("evilgithub.test", 443, "/") {
		t.Error("github binding")
	}
	if !maps.Binds("maps.test", 443, "/v1/x") || maps.Binds("maps.test", 443, "/v1/../admin") || maps.Binds("maps.test", 443, "/v2/") {
		t.Error("path binding")
	}
}

func TestLookalike(t *testing.T) {
	real := mustFake(t, "github-pat")
	r := &Registry{Credentials: testCreds(real)}
	r.Mint("acme", "run-1")
	gh := useOf(t, r, "github")
	for _, tc := range []struct {
		name, user, pass string
		want             bool
	}{
		{"phantom", "x", gh.Phantom, false},
		{"the real one", "x", real, true},
		{"another real-looking", "x", mustFake(t, "github-pat"), true},
		{"something else", "x", "hunter2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "https://github.test/", nil)
			req.SetBasicAuth(tc.user, tc.pass)
			fp, ok := gh.Lookalike(req, real)
			if ok != tc.want || (ok && (fp == "" || strings.Contains(fp, tc.pass))) {
				t.Errorf("Lookalike = %q %v, want %v", fp, ok, tc.want)
			}
		})
	}
}

func TestFileRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(path, []byte("one\n"), 0o600)
	f := &File{Path: path, CheckEvery: time.Nanosecond}
	if v, err := f.Secret(); err != nil || v != "one" {
		t.Fatalf("%q %v", v, err)
	}
	os.WriteFile(path, []byte("two-rotated\n"), 0o600)
	if v, err := f.Secret(); err != nil || v != "two-rotated" {
		t.Fatalf("after rotation: %q %v", v, err)
	}
	os.Remove(path)
	if _, err := f.Secret(); err == nil {
		t.Error("a removed secret file still gives a value")
	}
	if _, err := (Env{Name: "SLUICE_TEST_UNSET_SECRET"}).Secret(); err == nil {
		t.Error("an unset variable gave a secret")
	}
}

func TestScrubResponse(t *testing.T) {
	real := mustFake(t, "github-pat")
	ph := mustFake(t, "github-pat") + "-longer"
	body := "error: token " + real + " is invalid; url=/x?t=" + strings.ReplaceAll(real, "_", "%5F") + " end " + real
	want := strings.ReplaceAll(body, real, ph)
	swaps := []Swap{{Real: real, Phantom: ph}}

	t.Run("identity, byte by byte", func(t *testing.T) {
		resp := &http.Response{StatusCode: 401, Header: http.Header{"Www-Authenticate": {"Bearer error=" + real}, "Content-Length": {"9"}},
			Body: io.NopCloser(iotest.OneByteReader(strings.NewReader(body))), ContentLength: int64(len(body))}
		if err := ScrubResponse(resp, swaps); err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		if string(got) != want || strings.Contains(resp.Header.Get("Www-Authenticate"), real) || resp.ContentLength != -1 || resp.Header.Get("Content-Length") != "" {
			t.Errorf("body %q header %q len %d", got, resp.Header, resp.ContentLength)
		}
	})
	t.Run("gzip", func(t *testing.T) {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(body))
		zw.Close()
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Encoding": {"gzip"}}, Body: io.NopCloser(&buf)}
		if err := ScrubResponse(resp, swaps); err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(zr)
		if string(got) != want {
			t.Errorf("gzip body %q", got)
		}
	})
	// What the scrub cannot read fails closed: br, zstd, deflate and
	// stacked encodings, however the header spells them.
	for _, enc := range [][]string{{"br"}, {"zstd"}, {"deflate"}, {"gzip, br"}, {"gzip", "br"}, {"gzip, gzip"}, {"identity, br"}, {"x-custom"}} {
		t.Run("refuses "+strings.Join(enc, "|"), func(t *testing.T) {
			resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Encoding": enc}, Body: io.NopCloser(strings.NewReader(body))}
			if err := ScrubResponse(resp, swaps); !errors.Is(err, ErrUnscrubbable) {
				t.Errorf("ScrubResponse = %v, want ErrUnscrubbable", err)
			}
		})
	}
	t.Run("no swaps leaves any encoding alone", func(t *testing.T) {
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Encoding": {"br"}}, Body: io.NopCloser(strings.NewReader("x"))}
		if err := ScrubResponse(resp, nil); err != nil {
			t.Error(err)
		}
	})
}

// TestScrubSpellings: every spelling the gateway itself put on the wire
// comes back as the phantom's: percent-encoded for a path or a query (upper
// or lower hex), and, for Basic, the base64 of the user:secret pair, padded
// or not.
func TestScrubSpellings(t *testing.T) {
	real := "ghp_" + strings.Repeat("aB3+/=", 6) + "zz"
	r := &Registry{Credentials: map[string][]*Credential{"acme": {{Name: "github", Secret: fixed(real),
		Hosts: []string{"github.test"}, Placement: Basic, User: "x-access-token", Format: "github-pat"}}}}
	if _, err := r.Mint("acme", "run-1"); err != nil {
		t.Fatal(err)
	}
	gh := useOf(t, r, "github")
	req := httptest.NewRequest("GET", "https://github.test/", nil)
	sent := base64.StdEncoding.EncodeToString([]byte("git:" + gh.Phantom))
	req.Header.Set("Authorization", "Basic "+sent)
	wire, ok := gh.InjectWire(req, real)
	if !ok {
		t.Fatal("not injected")
	}
	onWire := strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
	swaps := append([]Swap{{Real: real, Phantom: gh.Phantom}}, wire...)
	lowerHex := func(s string) string {
		return strings.NewReplacer("%2B", "%2b", "%2F", "%2f", "%3D", "%3d").Replace(s)
	}
	for name, spelled := range map[string]string{
		"raw":                real,
		"query escaped":      url.QueryEscape(real),
		"path escaped":       url.PathEscape(real),
		"lower hex":          lowerHex(url.QueryEscape(real)),
		"basic pair":         onWire,
		"basic pair no pad":  strings.TrimRight(onWire, "="),
		"basic pair decoded": "x-access-token:" + real,
	} {
		t.Run(name, func(t *testing.T) {
			body := "you sent <" + spelled + "> ok"
			resp := &http.Response{StatusCode: 200, Header: http.Header{"X-Echo": {spelled}},
				Body: io.NopCloser(iotest.HalfReader(strings.NewReader(body)))}
			if err := ScrubResponse(resp, swaps); err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			for _, leak := range []string{real, url.QueryEscape(real), url.PathEscape(real), strings.TrimRight(onWire, "=")} {
				if strings.Contains(string(got), leak) || strings.Contains(resp.Header.Get("X-Echo"), leak) {
					t.Errorf("a spelling of the real secret came back: body %q", got)
				}
			}
			if !strings.HasPrefix(string(got), "you sent <") || !strings.HasSuffix(string(got), "> ok") {
				t.Errorf("body around the secret changed: %q", got)
			}
		})
	}
}

// TestBindsAsThePolicy checks that a binding reads hosts and paths as the policy does:
// a path with dot segments gets no real secret, even where resolving them would land
// under a bound prefix, since an upstream may resolve them otherwise.
func TestBindsAsThePolicy(t *testing.T) {
	real := mustFake(t, "github-pat")
	r := &Registry{Credentials: testCreds(real)}
	if _, err := r.Mint("acme", "run-1"); err != nil {
		t.Fatal(err)
	}
	maps, gh := useOf(t, r, "maps"), useOf(t, r, "github")
	for _, tc := range []struct {
		name, host, path string
		want             bool
	}{
		{"under prefix", "maps.test", "/v1/x", true},
		{"prefix itself", "maps.test", "/v1/", true},
		{"escaped name", "maps.test", "/v1/%7Ex", true},
		{"host spelled otherwise", "MAPS.test.", "/v1/x", true},
		{"outside prefix", "maps.test", "/v2/x", false},
		{"no path", "maps.test", "", false},
		{"dotdot out", "maps.test", "/v1/../admin", false},
		{"dotdot staying under", "maps.test", "/v1/x/../y", false},
		{"dot", "maps.test", "/v1/./x", false},
		{"encoded dotdot", "maps.test", "/v1/%2e%2e/v1/x", false},
		{"encoded slash dotdot", "maps.test", "/v1/x%2f..%2fy", false},
		{"servlet params", "maps.test", "/v1/..;/v1/x", false},
		{"backslash", "maps.test", "/v1/x\\..\\y", false},
		{"double encoded dot", "maps.test", "/v1/%252e%252e/x", false},
		{"bad escape", "maps.test", "/v1/%zz", false},
		{"other host", "evilmaps.test", "/v1/x", false},
		{"bad host", "maps.test:443", "/v1/x", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := maps.Binds(tc.host, 443, tc.path); got != tc.want {
				t.Errorf("Binds(%q, %q) = %v, want %v", tc.host, tc.path, got, tc.want)
			}
		})
	}
	// Without paths, any path of a bound host is bound, dot segments or not: the policy
	// decides the path.
	if !gh.Binds("x.github.test", 443, "/a/../b") || !gh.BindsHost("X.GitHub.test.", 443) {
		t.Error("github binding")
	}
	if gh.BindsHost("xn--ghub-2ra.test", 443) || gh.BindsHost("test", 443) {
		t.Error("github binding matches another host")
	}
	for _, h := range []string{"*.test", "*", "api.test:443", "a_b.test"} {
		c := &Credential{Name: "wide", Secret: fixed(real), Hosts: []string{"api.test", h}}
		if err := c.Check(); err == nil {
			t.Errorf("Check accepts host %q", h)
		}
	}
}
