package dashboard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluice-egress/sluice/store"
)

// TestBrowserLiveQueue: in headless Chromium, a request filed while the
// review page is open appears on it without a reload (server-sent events),
// its hostile reason as inert text; approving it from that row records the
// reviewer's scope.
func TestBrowserLiveQueue(t *testing.T) {
	bin := findChromium()
	if bin == "" {
		if os.Getenv("SLUICE_REQUIRE_BROWSER") == "1" {
			t.Fatal("SLUICE_REQUIRE_BROWSER=1 but no chromium on $PATH")
		}
		t.Skip("UNTESTED: no chromium on $PATH (apt-get install -y chromium)")
	}
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	w, svc := reviewWorld(t)
	actx, cancel := chromedp.NewExecAllocator(context.Background(),
		append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
			chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	tctx, tcancel := context.WithTimeout(ctx, 60*time.Second)
	defer tcancel()
	dir := screenshotDir(t)
	shot := func(name string) {
		b, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
		if err == nil {
			os.WriteFile(filepath.Join(dir, name+".png"), b, 0o644)
		}
	}
	do := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(tctx, actions...); err != nil {
			shot("failed-" + strings.ReplaceAll(step, " ", "-"))
			t.Fatalf("%s: %v", step, err)
		}
	}
	base := w.srv.URL
	do("log in", chromedp.Navigate(base+"/review"), chromedp.WaitVisible(chromedp.ID("login")),
		chromedp.SetValue(chromedp.ID("user"), "rex"), chromedp.SetValue(chromedp.ID("password"), worldPassword),
		chromedp.Click(chromedp.ID("login")), chromedp.WaitVisible(chromedp.ID("queue")))
	do("open queue", chromedp.Navigate(base+"/review"), chromedp.WaitVisible(chromedp.ID("queue")), chromedp.Sleep(300*time.Millisecond))
	marker, err := chromedp.Run(tctx, chromedp.Evaluate[int](`(window.__marker = 7)`))
	if err != nil || marker != 7 {
		t.Fatalf("marker: %v", err)
	}

	f := file(t, svc, "acme", "r-live", "live.example.test")
	row := "q-" + f.Request.ID
	do("row appears", chromedp.WaitVisible(chromedp.ID(row)))
	shot("20-live-queue")
	if n, _ := chromedp.Run(tctx, chromedp.Evaluate[int](`window.__marker || 0`)); n != 7 {
		t.Fatal("the page reloaded: the row must arrive live")
	}
	txt, err := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("#"+row+" .c-reason")))
	if err != nil || txt != hostileReason {
		t.Fatalf("reason shown as %q (%v)", txt, err)
	}
	if title, _ := chromedp.Run(tctx, chromedp.Title()); strings.Contains(title, "pwned") {
		t.Fatal("the reason ran as script")
	}
	if n, _ := chromedp.Run(tctx, chromedp.Evaluate[int](`document.querySelectorAll('#queue img').length`)); n != 0 {
		t.Fatal("the reason became markup")
	}
	who, _ := chromedp.Run(tctx, chromedp.Text(chromedp.CSS("#"+row+" .c-who")))
	if !strings.Contains(who, "r-live") {
		t.Fatalf("run not shown: %q", who)
	}
	do("approve", chromedp.SetValue(chromedp.CSS("#"+row+` select[name="scope"]`), "run"),
		chromedp.SetValue(chromedp.CSS("#"+row+` input[name="ttl"]`), "30m"),
		chromedp.Click(chromedp.CSS("#"+row+" button.approve")), chromedp.WaitNotPresent(chromedp.ID(row)))
	x, _ := w.store.GetAccessRequest(context.Background(), f.Request.ID)
	c, _ := w.store.GetAccessContext(context.Background(), f.Request.ID)
	if x.State != store.AccessApproved || x.Reviewer != "rex" || c.Scope != store.ScopeRun || x.ExpiresAt.After(time.Now().Add(time.Hour)) {
		t.Fatalf("after approval: %+v %+v", x, c)
	}
	shot("21-queue-after-approval")
}
