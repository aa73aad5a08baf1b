package gateway_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/gateway"
	"github.com/sluice-egress/sluice/rules"
	"github.com/sluice-egress/sluice/scanner"
)

// drainDialed fails the test for any upstream address the gateway dialled.
func (w *world) noDials(t *testing.T) {
	t.Helper()
	for {
		select {
		case a := <-w.dialed:
			t.Errorf("the gateway dialled %s for a refusal", a)
		default:
			return
		}
	}
}

// A refused CONNECT answered inside TLS: the client's own request gets the
// 403 with its body, nothing is dialled, and the body says what was refused,
// by whose policy, and how to ask.
func TestRefusalInsideTLS(t *testing.T) {
	w := newWorld(t)
	w.gw.RefuseInTLS = true
	authority := net.JoinHostPort("evil.example.test", strconv.Itoa(w.up.port))

	resp, err := w.acme().Get("https://" + authority + "/upload?x=1")
	if err != nil {
		t.Fatalf("a client trusting the tenant CA got no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || resp.Header.Get("Sluice-Reason") != rules.ReasonHostNotAllowed || resp.Header.Get("Sluice-Incident") == "" {
		t.Fatalf("got %d %q %q", resp.StatusCode, resp.Header.Get("Sluice-Reason"), resp.Header.Get("Sluice-Incident"))
	}
	text := string(body)
	first, _, _ := strings.Cut(text, "\n")
	for _, want := range []string{
		"refused: CONNECT " + authority,
		"policy: tenant acme, class agent",
		"incident: " + resp.Header.Get("Sluice-Incident"),
		"ask: POST " + gateway.FilingURL,
		`"host":"evil.example.test","ports":[` + strconv.Itoa(w.up.port) + `]`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("body lacks %q:\n%s", want, text)
		}
	}
	if !strings.HasPrefix(first, "sluice: host-not-allowed: ") {
		t.Errorf("first line %q", first)
	}
	w.noDials(t)
	if n := len(w.sink.reasons()); n != 1 {
		t.Errorf("%d incidents for one refusal: %q", n, w.sink.reasons())
	}

	// The same as JSON.
	req, _ := http.NewRequest("GET", "https://"+authority+"/", nil)
	req.Header.Set("Accept", "application/json")
	resp, err = w.acme().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Error   string `json:"error"`
		Refused struct {
			Host string `json:"host"`
			Port int    `json:"port"`
		} `json:"refused"`
		Policy struct{ Tenant, Class string } `json:"policy"`
		Ask    struct {
			URL  string `json:"url"`
			Body struct {
				Host  string `json:"host"`
				Ports []int  `json:"ports"`
			} `json:"body"`
		} `json:"ask"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if v.Error != rules.ReasonHostNotAllowed || v.Refused.Host != "evil.example.test" || v.Policy.Tenant != "acme" ||
		v.Ask.URL != gateway.FilingURL || v.Ask.Body.Host != "evil.example.test" || len(v.Ask.Body.Ports) != 1 {
		t.Fatalf("JSON refusal %+v", v)
	}

	// A client that does not trust the tenant CA fails its handshake; the
	// refusal is recorded all the same.
	before := len(w.sink.reasons())
	if _, err := w.client("acme", w.tokens["acme"], nil).Get("https://" + authority + "/"); err == nil {
		t.Fatal("a client without the tenant CA completed a handshake")
	}
	if len(w.sink.reasons()) != before+1 {
		t.Fatal("the refusal of an untrusting client was not recorded")
	}
	w.noDials(t)
}

// A passthrough host is never answered with a tenant leaf: refused for its
// port, it gets the plain 403 to its CONNECT.
func TestRefusalPassthroughHostStaysPlain(t *testing.T) {
	w := newWorld(t)
	w.gw.RefuseInTLS = true
	conn, resp := w.connect("acme", w.tokens["acme"], "pass.example.test:1")
	if conn != nil {
		t.Fatal("CONNECT to a passthrough host's other port was answered 200")
	}
	if resp.StatusCode != 403 || resp.Header.Get("Sluice-Reason") != rules.ReasonPortNotAllowed {
		t.Fatalf("got %d %q", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
	}
	w.noDials(t)
}

// A blocked secret names its rule and where it was found, never the value.
func TestRefusalNamesSecretRule(t *testing.T) {
	w := newWorld(t)
	w.gw.Scanner = &scanner.Scanner{Key: []byte("0123456789abcdef0123456789abcdef")}
	fake, err := scanner.FakeSecret("github-pat")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", w.url("api.example.test", "/v1/notes"), strings.NewReader(`{"note":"`+fake+`"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.acme().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("got %d", resp.StatusCode)
	}
	if !strings.Contains(string(body), "github-pat in json:$.note") {
		t.Errorf("body does not name rule and place:\n%s", body)
	}
	if strings.Contains(string(body), fake) || strings.Contains(string(body), fake[len(fake)-12:]) {
		t.Fatal("the refusal repeats the secret")
	}
	if strings.Contains(string(body), "ask:") {
		t.Error("a secret refusal offers an access request: no grant lifts it")
	}
}

// An ended run's token gets run-ended (403), not the 407 of wrong credentials.
func TestRunEndedRefusal(t *testing.T) {
	w := newWorld(t)
	engine := w.gw.Policy.(*rules.Engine)
	tok := randomToken(t)
	if err := engine.AddRun(rules.Run{ID: "r-ended", Tenant: "acme", Class: "agent", TokenHash: rules.HashToken(tok)}); err != nil {
		t.Fatal(err)
	}
	engine.RemoveRun("r-ended")
	conn, resp := w.connect("acme", tok, net.JoinHostPort("api.example.test", strconv.Itoa(w.up.port)))
	if conn != nil {
		t.Fatal("an ended run opened a tunnel")
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 403 || resp.Header.Get("Sluice-Reason") != rules.ReasonRunEnded {
		t.Fatalf("got %d %q", resp.StatusCode, resp.Header.Get("Sluice-Reason"))
	}
	if !strings.Contains(string(body), "run \"r-ended\" has ended") {
		t.Errorf("body %q", body)
	}
	// Another tenant's name with that token is plain wrong credentials.
	if _, resp := w.connect("globex", tok, "other.example.test:443"); resp.StatusCode != 407 {
		t.Fatalf("another tenant's name: %d", resp.StatusCode)
	}
	w.noDials(t)
}

// fakeDesk records filings; AwaitFn answers held ones.
type fakeDesk struct {
	mu      sync.Mutex
	filed   []gateway.Filing
	FileErr error
	AwaitFn func(ctx context.Context, f gateway.Filing) (gateway.Filed, error)
}

func (d *fakeDesk) Await(ctx context.Context, f gateway.Filing) (gateway.Filed, error) {
	d.mu.Lock()
	d.filed = append(d.filed, f)
	fn := d.AwaitFn
	d.mu.Unlock()
	if fn == nil {
		<-ctx.Done()
		return gateway.Filed{}, ctx.Err()
	}
	return fn(ctx, f)
}

func (d *fakeDesk) File(_ context.Context, f gateway.Filing) (gateway.Filed, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.FileErr != nil {
		return gateway.Filed{}, d.FileErr
	}
	d.filed = append(d.filed, f)
	return gateway.Filed{ID: "ar-" + strconv.Itoa(len(d.filed)), State: "pending", Host: f.Host}, nil
}

func (d *fakeDesk) Status(_ context.Context, who rules.Identity, id string) (gateway.Filed, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, f := range d.filed {
		if "ar-"+strconv.Itoa(i+1) == id && f.Who == who {
			return gateway.Filed{ID: id, State: "pending", Host: f.Host}, nil
		}
	}
	return gateway.Filed{}, gateway.ErrFilingNotFound
}

// A sandbox files an access request at sluice.internal through its proxy,
// as itself: the gateway answers, dials nothing, and passes on exactly the
// identity of the proxy credentials.
func TestInternalFiling(t *testing.T) {
	w := newWorld(t)
	desk := &fakeDesk{}
	w.gw.Desk = desk
	post := func(c *http.Client, u, body string) (int, string) {
		t.Helper()
		resp, err := c.Post(u, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	body := `{"host":"evil.example.test","ports":[443],"reason":"<script>fetch docs</script>"}`
	code, out := post(w.acme(), gateway.FilingURL, body)
	if code != 201 || !strings.Contains(out, `"id": "ar-1"`) {
		t.Fatalf("filing: %d %s", code, out)
	}
	// Through CONNECT sluice.internal:443 too, with the tenant CA.
	if code, out := post(w.acme(), "https://"+gateway.InternalHost+"/v1/access-requests", body); code != 201 {
		t.Fatalf("filing over TLS: %d %s", code, out)
	}
	desk.mu.Lock()
	got := desk.filed
	desk.mu.Unlock()
	if len(got) != 2 || got[0].Who != (rules.Identity{Tenant: "acme", Class: "agent"}) || got[0].Host != "evil.example.test" ||
		got[0].Reason != "<script>fetch docs</script>" {
		t.Fatalf("filed %+v", got)
	}
	// The body names no tenant or run: a filing cannot speak for another.
	for _, bad := range []string{`{"host":"x.example.test","reason":"r","tenant":"globex"}`, `{"host":"x.example.test","reason":"r","run":"r-2"}`} {
		if code, _ := post(w.acme(), gateway.FilingURL, bad); code != 400 {
			t.Errorf("%s: %d, want 400", bad, code)
		}
	}
	// Status: only the filer sees its request.
	get := func(c *http.Client, id string) int {
		resp, err := c.Get(gateway.FilingURL + "/" + id)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(w.acme(), "ar-1"); code != 200 {
		t.Fatalf("own request: %d", code)
	}
	globex := w.client("globex", w.tokens["globex"], nil)
	if code := get(globex, "ar-1"); code != 404 {
		t.Fatalf("another tenant's request: %d", code)
	}
	desk.FileErr = errors.Join(gateway.ErrFilingLimited)
	if code, _ := post(w.acme(), gateway.FilingURL, body); code != 429 {
		t.Fatalf("rate limited: %d", code)
	}
	w.gw.Desk = nil
	if code, _ := post(w.acme(), gateway.FilingURL, body); code != 503 {
		t.Fatalf("no desk: %d", code)
	}
	// No credentials: 407, as for any request.
	noAuth := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: w.proxyAddr}),
		TLSClientConfig: &tls.Config{}}, Timeout: 5 * time.Second}
	resp, err := noAuth.Post(gateway.FilingURL, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 407 {
		t.Fatalf("unauthenticated filing: %d", resp.StatusCode)
	}
	w.noDials(t)
}
