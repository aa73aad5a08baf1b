package dashboard

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/sluice-egress/sluice/incident"
	"github.com/sluice-egress/sluice/store"
)

// TestBrowserTriage drives headless Chromium through the triage loop on a
// store of 100,000 incidents: search, group by fingerprint, triage a group
// in bulk with one note, mark rows with the keyboard and triage them, then
// the Runs page, ending a run. The page's own script must run (the CSP
// allows it) and log no error; nothing may leave the dashboard's origin.
func TestBrowserTriage(t *testing.T) {
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
	w := mustPageWorld(t)
	seedVolume(t, w, volumeIncidents)
	ctx := context.Background()

	var log requestLog
	var jsErrors []string
	actx, cancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin),
		chromedp.NoSandbox, chromedp.WindowSize(1280, 900), chromedp.Flag("disable-gpu", true))...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx, chromedp.WithListener(func(ev any) {
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			log.add(e.Request.URL)
		case *runtime.EventExceptionThrown:
			jsErrors = append(jsErrors, e.ExceptionDetails.Text)
		}
	}))
	defer cancel()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium %s: %v", bin, err)
	}
	tctx, tcancel := context.WithTimeout(bctx, 90*time.Second)
	defer tcancel()
	dir := screenshotDir(t)
	shot := func(name string) {
		t.Helper()
		b, err := chromedp.Run(tctx, chromedp.FullScreenshot(90))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name+".png"), b, 0o644)
		}
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
	}
	do := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(tctx, actions...); err != nil {
			shot("failed-triage-" + strings.ReplaceAll(step, " ", "-"))
			t.Fatalf("%s: %v", step, err)
		}
	}
	count := func(sel string) int {
		t.Helper()
		n, err := chromedp.Run(tctx, chromedp.Evaluate[int](`document.querySelectorAll(`+"`"+sel+"`"+`).length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// submit does actions that load a new page and waits for it.
	submit := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if _, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`document.body.dataset.old = "1"; true`)); err != nil {
			t.Fatal(err)
		}
		do(step, actions...)
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			// Errors while the old page goes away are expected: retry.
			ok, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`!document.body.dataset.old && document.readyState === "complete"`))
			if err == nil && ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no new page: %v", step, err)
			}
		}
	}
	base := w.srv.URL

	do("log in", chromedp.Navigate(base+"/incidents"), chromedp.WaitVisible(chromedp.ID("login")),
		chromedp.SetValue(chromedp.ID("user"), "ada"), chromedp.SetValue(chromedp.ID("password"), worldPassword),
		chromedp.Click(chromedp.ID("login")), chromedp.WaitVisible(chromedp.ID("incidents")))
	if n := count("#incidents tbody tr"); n != 50 {
		t.Fatalf("first page has %d rows", n)
	}

	// Search: partial, in the path.
	submit("search", chromedp.SetValue(chromedp.ID("q"), "items/699"), chromedp.Click(chromedp.ID("apply")))
	if loc, _ := chromedp.Run(tctx, chromedp.Location()); !strings.Contains(loc, "q=items%2F699") {
		t.Fatalf("search not in the URL: %s", loc)
	}
	if n := count(`#incidents tbody a[href^="/incidents/inc_v"]`); n != 50 {
		t.Fatalf("search shows %d incidents, want a full page", n)
	}
	shot("20-triage-search")

	// Group by fingerprint within a rule: a group per secret.
	do("rule", chromedp.Navigate(base+"/incidents?rule=rule-1"), chromedp.WaitVisible(chromedp.ID("incidents")))
	submit("group", chromedp.SetValue(chromedp.ID("f-group"), "fingerprint"), chromedp.Click(chromedp.ID("apply")))
	if n := count("#groups tbody tr"); n != 20 {
		t.Fatalf("rule-1 has %d fingerprint groups, want 20", n)
	}
	shot("21-triage-groups")
	submit("bulk group", chromedp.Click(chromedp.CSS(`#groups input[value="fp-001"]`)),
		chromedp.SetValue(chromedp.ID("bulk-state"), "false-positive"), chromedp.SetValue(chromedp.ID("bulk-note"), "test fixture secret"),
		chromedp.Click(chromedp.ID("bulk-save")))
	n, err := w.store.CountIncidents(ctx, store.IncidentFilter{Fingerprint: "fp-001", Triage: incident.TriageFalsePositive, Search: "test fixture"})
	total, _ := w.store.CountIncidents(ctx, store.IncidentFilter{Fingerprint: "fp-001"})
	if err != nil || n != total || n < 300 {
		t.Fatalf("group triage: %d of %d (%v)", n, total, err)
	}

	// The keyboard: j j x marks the second row, j x the third; triage both.
	do("keys", chromedp.Navigate(base+"/incidents?triage=new&kind=deny"), chromedp.WaitVisible(chromedp.ID("incidents")),
		chromedp.KeyEvent("j"), chromedp.KeyEvent("j"), chromedp.KeyEvent("x"), chromedp.KeyEvent("j"), chromedp.KeyEvent("x"))
	if n := count("#incidents tbody tr.cur"); n != 1 {
		t.Fatalf("%d current rows after j", n)
	}
	if n := count("#incidents tbody input:checked"); n != 2 {
		t.Fatalf("%d rows marked with x, want 2", n)
	}
	ids, err := chromedp.Run(tctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#incidents tbody input:checked')].map(e => e.value)`))
	if err != nil {
		t.Fatal(err)
	}
	shot("22-triage-keys")
	submit("bulk marked", chromedp.SetValue(chromedp.ID("bulk-state"), "acknowledged"), chromedp.Click(chromedp.ID("bulk-save")))
	for _, id := range ids {
		if in, err := w.store.GetIncident(ctx, id); err != nil || in.Triage.State != incident.TriageAcknowledged || in.Triage.Actor != "ada" {
			t.Fatalf("%s after bulk: %+v %v", id, in.Triage, err)
		}
	}
	// o opens the current row.
	submit("open", chromedp.KeyEvent("j"), chromedp.KeyEvent("o"))
	if loc, _ := chromedp.Run(tctx, chromedp.Location()); !strings.Contains(loc, "/incidents/inc_v") {
		t.Fatalf("o opened %s", loc)
	}

	// Runs: the live runs with their incident counts; end one.
	do("runs", chromedp.Navigate(base+"/runs"), chromedp.WaitVisible(chromedp.ID("runs")))
	if n := count("#runs tbody tr"); n != 100 {
		t.Fatalf("runs page has %d runs", n)
	}
	shot("23-runs")
	submit("run", chromedp.Click(chromedp.CSS(`#runs a[href="/runs/run_v042"]`)))
	shot("24-run")
	submit("end run", chromedp.Click(chromedp.ID("end-run-save")))
	if n := count("#end-run"); n != 0 {
		t.Fatal("the ended run can still be ended")
	}
	if r, err := w.store.GetRun(ctx, "run_v042"); err != nil || r.Ended.IsZero() {
		t.Fatalf("run not ended: %+v %v", r, err)
	}
	do("overview", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.ID("attention")))
	shot("25-overview-attention")

	if len(jsErrors) > 0 {
		t.Errorf("script errors: %v", jsErrors)
	}
	for _, u := range log.all() {
		if !strings.HasPrefix(u, base+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("a request left the dashboard's origin: %s", u)
		}
	}
}
