package scanner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// chatWith is a chat request body whose one message is prose around extra.
func chatWith(extra string) string {
	prose := strings.Repeat("the river runs past the old mill and the garden wall ", 8)
	b, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": prose + extra + " " + prose}}})
	return string(b)
}

func scanChat(t *testing.T, s *Scanner, tenant, host, body string, allowed func(string) bool) *Result {
	t.Helper()
	res, err := s.Scan(context.Background(), &Request{Tenant: tenant, Host: host,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: strings.NewReader(body), Allowed: allowed})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A clean text sent again is not scanned again; another tenant's or
// host's same text, or a text one byte apart, is.
func TestCleanCacheHits(t *testing.T) {
	s := testScanner(t)
	body := chatWith("nothing to see here")
	scanChat(t, s, "a", "api.example.test", body, nil)
	if n := s.clean.hits.Load(); n != 0 {
		t.Fatalf("first scan: %d hits, want 0", n)
	}
	scanChat(t, s, "a", "api.example.test", body, nil)
	if n := s.clean.hits.Load(); n != 1 {
		t.Fatalf("same text again: %d hits, want 1", n)
	}
	scanChat(t, s, "b", "api.example.test", body, nil)
	scanChat(t, s, "a", "other.example.test", body, nil)
	scanChat(t, s, "a", "api.example.test", chatWith("nothing to see herf"), nil)
	if n := s.clean.hits.Load(); n != 1 {
		t.Fatalf("other tenant, host or text: %d hits, want still 1", n)
	}
	off := testScanner(t)
	off.CleanCacheEntries = -1
	scanChat(t, off, "a", "api.example.test", body, nil)
	if off.clean != nil {
		t.Fatal("CleanCacheEntries -1 made a cache")
	}
}

// A text with a secret is blocked every time: only clean texts are kept.
func TestCleanCacheNeverKeepsFindings(t *testing.T) {
	s := testScanner(t)
	body := chatWith("my key " + MustFake(t, "github-pat"))
	for i := range 3 {
		if res := scanChat(t, s, "a", "api.example.test", body, nil); res.Verdict != Block {
			t.Fatalf("scan %d: verdict %v, want block", i, res.Verdict)
		}
	}
	if n := s.clean.hits.Load(); n != 0 {
		t.Fatalf("%d hits on a text with a secret", n)
	}
}

// Each text of a body is looked up under its own key (the next one's is
// computed ahead, to fetch its set early): a text that changed is
// scanned, the ones around it that did not are not.
func TestCleanCacheKeyPerText(t *testing.T) {
	s := testScanner(t)
	prose := strings.Repeat("the river runs past the old mill and the garden wall ", 8)
	body := func(middle string) string { // three texts in a row, as an embeddings request sends them
		b, _ := json.Marshal(map[string]any{"input": []string{"first " + prose, middle + " " + prose, "third " + prose}})
		return string(b)
	}
	if res := scanChat(t, s, "a", "api.example.test", body("second"), nil); res.Verdict != Pass {
		t.Fatalf("clean body: verdict %v", res.Verdict)
	}
	res := scanChat(t, s, "a", "api.example.test", body("my key "+MustFake(t, "github-pat")), nil)
	if res.Verdict != Block {
		t.Fatalf("the middle text with a secret: verdict %v, want block", res.Verdict)
	}
	if n := s.clean.hits.Load(); n != 2 {
		t.Fatalf("%d hits, want 2: the first and third texts", n)
	}
	scanChat(t, s, "a", "api.example.test", body("second"), nil)
	if n := s.clean.hits.Load(); n != 5 {
		t.Fatalf("%d hits, want 5: the first body's three texts again", n)
	}
}

// A token that becomes a canary or a phantom after its text was found
// clean (a replica that learns of it late) is found when the text comes
// again.
func TestCleanCacheRechecksCanariesAndPhantoms(t *testing.T) {
	for _, kind := range []string{"canary", "phantom"} {
		t.Run(kind, func(t *testing.T) {
			s := testScanner(t)
			tok := "zqvzqvzqvzqvzqvzqvzqvzqvzqvzqvzq" // as long as the value below, no secret to the rules
			other := "wxywxywxywxywxywxywxywxywxywxywx"
			c := phantoms{key: s.Key, vals: map[string]string{other: "c0"}}
			p := phantoms{key: s.Key, vals: map[string]string{other: "github"}}
			if kind == "canary" {
				s.Canaries = c
			} else {
				s.Phantoms = p
			}
			body := chatWith("ref " + tok)
			if res := scanChat(t, s, "a", "api.example.test", body, nil); res.Verdict != Pass {
				t.Fatalf("before: verdict %v, want pass", res.Verdict)
			}
			if res := scanChat(t, s, "a", "api.example.test", body, nil); res.Verdict != Pass || s.clean.hits.Load() != 1 {
				t.Fatalf("again: verdict %v, %d hits, want pass from the cache", res.Verdict, s.clean.hits.Load())
			}
			c.vals[tok], p.vals[tok] = "c1", "github"
			res := scanChat(t, s, "a", "api.example.test", body, nil)
			if res.Verdict != Block {
				t.Fatalf("after the %s was known: verdict %v, want block", kind, res.Verdict)
			}
		})
	}
}

// A canary of a new length is found in a text cached before it.
func TestCleanCacheNewLength(t *testing.T) {
	s := testScanner(t)
	c := phantoms{key: s.Key, vals: map[string]string{"wxywxywxywxywxywxywxywxywxywxywx": "c0"}}
	s.Canaries = c
	tok := "zqvzqvzqvzqvzqvzqvzqvzqvzqvzqvzqvzqvzq" // another length
	body := chatWith("ref " + tok)
	scanChat(t, s, "a", "api.example.test", body, nil)
	c.vals[tok] = "c1"
	if res := scanChat(t, s, "a", "api.example.test", body, nil); res.Verdict != Block {
		t.Fatalf("verdict %v, want block", res.Verdict)
	}
}

// A text with a link is not cached: the link's host may be refused
// tomorrow.
func TestCleanCacheSkipsLinks(t *testing.T) {
	s := testScanner(t)
	body := chatWith("see ![chart](https://img.example.test/chart.png?d=" + strings.Repeat("a1b2c3d4", 6) + ")")
	open := func(string) bool { return true }
	for range 2 {
		if res := scanChat(t, s, "a", "api.example.test", body, open); res.Verdict != Pass {
			t.Fatalf("allowed host: verdict %v, want pass", res.Verdict)
		}
	}
	if n := s.clean.hits.Load(); n != 0 {
		t.Fatalf("%d hits on a text with a link", n)
	}
	closed := func(string) bool { return false }
	if res := scanChat(t, s, "a", "api.example.test", body, closed); res.Verdict == Pass {
		t.Fatal("host refused now: the link passed")
	}
}

// The cache holds about as many texts as it is given, however many come.
func TestCleanCacheBounded(t *testing.T) {
	s := testScanner(t)
	s.CleanCacheEntries = 64
	for i := range 500 {
		scanChat(t, s, "a", "api.example.test", chatWith(fmt.Sprint("message ", i)), nil)
	}
	if n := s.clean.len(); n == 0 || n > 64 {
		t.Fatalf("%d entries, want 1 to 64", n)
	}
}

// A set keeps its most recently used keys: a hit keeps a key, the least
// recently used one is dropped, and its tokens with it; an entry without
// tokens gets none from a neighbour.
func TestCleanCacheDropsLeastRecentlyUsed(t *testing.T) {
	c := newCleanCache(cleanWays) // one set
	key := func(i uint64) cleanKey { return cleanKey{i << 1, i<<1 | 1} }
	c.add(key(1), []string{"fp-a", "fp-b"})
	for i := uint64(2); i <= cleanWays; i++ {
		c.add(key(i), nil)
	}
	check := func(k cleanKey, tokens ...string) {
		t.Helper()
		got, ok := c.get(k)
		if !ok || !slices.Equal(got, tokens) {
			t.Fatalf("get %v: %v %v, want tokens %v", k, got, ok, tokens)
		}
	}
	check(key(1), "fp-a", "fp-b") // the most recently used now; key(2) the least
	check(key(3))
	c.add(key(cleanWays+1), nil)
	if _, ok := c.get(key(2)); ok {
		t.Fatal("the least recently used key is still found")
	}
	check(key(1), "fp-a", "fp-b")
	for i := uint64(cleanWays + 2); i <= 2*cleanWays+1; i++ {
		c.add(key(i), nil)
	}
	if _, ok := c.get(key(1)); ok {
		t.Fatal("a key all others were used after is still found")
	}
	if len(c.tokens) != 0 {
		t.Fatalf("a dropped entry's tokens are kept: %d", len(c.tokens))
	}
	if n := c.len(); n != cleanWays {
		t.Fatalf("%d keys in a set of %d", n, cleanWays)
	}
}

// Under concurrent lookups and insertions in a few sets, a hit gives its
// own key's tokens and no other's, and the tokens of dropped entries do not
// stay behind.
func TestCleanCacheConcurrent(t *testing.T) {
	c := newCleanCache(4 * cleanWays) // four sets, so that keys keep pushing each other out
	key := func(i uint64) cleanKey { return cleanKey{i << 1, i<<1 | 1} }
	tokensOf := func(i uint64) []string { // every third key has tokens of its own
		if i%3 != 0 {
			return nil
		}
		return []string{fmt.Sprint("fp-", i)}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := range 4 {
		wg.Go(func() {
			for n := range 20000 {
				i := uint64(n*7+g*13) % 64
				if n%2 == 0 {
					c.add(key(i), tokensOf(i))
					continue
				}
				if got, ok := c.get(key(i)); ok && !slices.Equal(got, tokensOf(i)) {
					select {
					case errs <- fmt.Sprintf("key %d: tokens %v, want %v", i, got, tokensOf(i)):
					default:
					}
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	marked := 0
	for _, set := range c.sets {
		for _, k := range set {
			if k[0]&cleanHasTokens != 0 {
				marked++
			}
		}
	}
	if len(c.tokens) != marked {
		t.Fatalf("%d entries hold tokens, %d token lists kept", marked, len(c.tokens))
	}
}

// A large body inspected on several cores, as a pipeline's jobs, gives the
// findings, in the same order, that one goroutine gives; a panic in one of
// its goroutines is raised in the scan's own, where the gateway recovers it.
func TestParallelInspect(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	var msgs []map[string]string
	for i := range 1200 {
		text := strings.Repeat(fmt.Sprintf("line %d of the build log and its output. ", i), 12)
		if i%37 == 0 {
			text += " token " + MustFake(t, "github-pat")
		}
		msgs = append(msgs, map[string]string{"role": "tool", "content": text})
	}
	b, _ := json.Marshal(map[string]any{"messages": msgs})
	text := 0
	for _, g := range mustSegments(t, b) {
		text += len(g.text)
	}
	if !spreads(0, text, pipeJobBytes(DefaultMaxBodyBytes)) {
		t.Fatalf("%d bytes of text: the test does not test the parallel path", text)
	}
	inspect := func(s *Scanner, parallel bool) []Finding {
		t.Helper()
		segs := mustSegments(t, b)
		var found []Finding
		var err error
		if parallel {
			found, err = s.inspect(context.Background(), &Request{}, segs)
		} else {
			found, err = s.inspectGroups(context.Background(), &Request{}, segs, s.newInspectShared(&Request{}))
		}
		if err != nil {
			t.Fatal(err)
		}
		return found
	}
	s := testScanner(t)
	s.CleanCacheEntries = -1
	if err := s.init(); err != nil {
		t.Fatal(err)
	}
	want, got := inspect(s, false), inspect(s, true)
	if len(want) < 30 || len(got) != len(want) {
		t.Fatalf("parallel: %d findings, want %d (at least 30)", len(got), len(want))
	}
	for i := range want {
		if got[i].Where != want[i].Where || got[i].secret != want[i].secret {
			t.Fatalf("finding %d: %s, want %s", i, got[i].Where, want[i].Where)
		}
	}

	boom := testScanner(t)
	boom.Canaries = panicCanaries{}
	if err := boom.init(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if p := recover(); p != "canary store failed" {
			t.Fatalf("recovered %v, want the worker's panic", p)
		}
	}()
	inspect(boom, true)
	t.Fatal("the scan returned")
}

// panicCanaries panics on every look-up, as a broken store might.
type panicCanaries struct{}

func (panicCanaries) Canary(string) (string, bool) { panic("canary store failed") }
func (panicCanaries) Lengths() map[int]bool        { return map[int]bool{4: true} }

func mustSegments(t *testing.T, body []byte) []*segment {
	t.Helper()
	segs, ok := jsonSegmentsFast(body, nil, nil)
	if !ok {
		t.Fatal("not JSON")
	}
	return segs
}

// The holder's count of texts not scanned again survives a reload.
func TestHolderCleanHits(t *testing.T) {
	s := testScanner(t)
	h := NewHolder(s)
	body := chatWith("nothing to see here")
	for range 3 {
		scanChat(t, h.Current(), "a", "api.example.test", body, nil)
	}
	next := testScanner(t)
	h.Swap(next)
	scanChat(t, next, "a", "api.example.test", body, nil)
	scanChat(t, next, "a", "api.example.test", body, nil)
	if n := h.CleanHits(); n != 3 {
		t.Fatalf("CleanHits = %d, want 2 before the reload and 1 after", n)
	}
}

// A scan spreads a body only across the cores other scans leave idle,
// and only a body of two jobs or more.
func TestSpreads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	if !spreads(0, 200, 100) {
		t.Fatal("alone on 2 cores: not spread")
	}
	if spreads(1, 200, 100) {
		t.Fatal("beside another scan on 2 cores: spread")
	}
	if spreads(0, 199, 100) {
		t.Fatal("less than two jobs: spread")
	}
}

// len is how many keys c holds.
func (c *cleanCache) len() int {
	n := 0
	for i := range c.sets {
		set, l := c.lock(uint64(i))
		for _, k := range set {
			if k != (cleanKey{}) {
				n++
			}
		}
		l.Unlock()
	}
	return n
}
