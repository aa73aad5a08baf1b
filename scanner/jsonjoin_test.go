package scanner

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestJoinedPieces(t *testing.T) {
	seg := func(where, text string) *segment { return &segment{where: where, text: text, body: true} }
	segs := []*segment{
		seg("json:$.model", "model: m"),
		seg("json:$.x[0]", "ghp_"), seg("json:$.x[1]", "AbCd"), seg("json:$.x[2]", "EfGh"), seg("json:$.x[3]", "1234"),
		seg("json:$.x[4]", "a string longer than a piece"),                                      // ends the run
		seg("json:$.y[0]", "abcdefgh"), seg("json:$.y[1]", "ijklmnop"), seg("json:$.y[2]", "q"), // three pieces: too few
		seg("json:$.z[0]", "aaaa"), seg("json:$.z[1]", "bbbb"), seg("json:$.z[3]", "cccc"), seg("json:$.z[4]", "dddd"), // a gap
		seg(`json:$["k[1]"]`, "v"), seg("header:X-A", "X-A: b"),
		seg("json:$.o.a", "a: ghp_AbCdEf"), seg("json:$.o.b", "b: Gh1234-x_y"), seg("json:$.o.c", "c: not a piece"),
		seg("json:$.p.a", "a: abcdefghij"), seg("json:$.q.b", "b: klmnopqrst"), // two objects
		seg("json:$.r.a", "a: https://example.test/x"), seg("json:$.r.b", "b: abcdefghijklmnop"), // a URL is no piece
	}
	var got []string
	for _, g := range joinedPieces(segs) {
		if !g.body {
			t.Errorf("%s: not a body segment", g.where)
		}
		got = append(got, g.where+" "+g.text)
	}
	if want := []string{"json:$.x[0:4] ghp_AbCdEfGh1234", "json:$.o.* ghp_AbCdEfGh1234-x_y"}; !slices.Equal(got, want) {
		t.Fatalf("joinedPieces = %q, want %q", got, want)
	}
}

// A token cut into the strings of a JSON array, a character or a few at a
// time, or split across two fields of an object, is found; an array of
// tags and a tool call's ids are no finding.
func TestJSONPiecesHideNoToken(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	pieces := func(n int) string {
		var p []string
		for i := 0; i < len(tok); i += n {
			p = append(p, tok[i:min(i+n, len(tok))])
		}
		return `{"model":"m","x":["` + strings.Join(p, `","`) + `"]}`
	}
	scan := func(body string) *Result { t.Helper(); return scanTyped(t, s, "application/json", body) }
	for _, n := range []int{1, 2, 4, 8} {
		res := scan(pieces(n))
		found := false
		for _, f := range res.Findings {
			found = found || string(f.secret) == tok && strings.HasPrefix(f.Where, "json:$.x[0:")
		}
		if res.Verdict != Block || !found {
			t.Errorf("pieces of %d: verdict %v, want block with the token found in the joined array:%s", n, res.Verdict, dump(res.Findings))
		}
	}
	for _, split := range []int{8, 20, 30} {
		body := `{"model":"m","meta":{"a":"` + tok[:split] + `","b":"` + tok[split:] + `"}}`
		found := false
		res := scan(body)
		for _, f := range res.Findings {
			found = found || string(f.secret) == tok && f.Where == "json:$.meta.*"
		}
		if res.Verdict != Block || !found {
			t.Errorf("split across two fields at %d: verdict %v, want block with the token found in the joined object:%s", split, res.Verdict, dump(res.Findings))
		}
	}
	for _, benign := range []string{
		`{"tags":["go","rust","js","py","c","java","ruby","perl","lua"]}`,
		`{"tool_calls":[{"id":"call_8fK2mQ9xLp","type":"function","function":{"name":"get_weather","arguments":"{}"}}]}`,
	} {
		if res := scan(benign); res.Verdict != Pass {
			t.Errorf("%s: verdict %v:%s", benign, res.Verdict, dump(res.Findings))
		}
	}
}

// A job's joined pieces go into an array of their own: a job is a part of
// a body's segments, and appending them in place overwrote the next job's
// first segments, which the pipeline then never inspected (or crashed on,
// once they had been inspected and cleared).
func TestJoinedPiecesLeaveTheNextJobAlone(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	body := `{"a":["abcdefgh","ijklmnop","qrstuvwx","yz012345"],"b":"` + tok + `","c":"x"}`
	segs := bodySegments([]byte(body), "application/json", nil, nil)
	k := slices.IndexFunc(segs, func(g *segment) bool { return strings.Contains(g.text, tok) })
	if k < 0 {
		t.Fatal("no segment holds the token")
	}
	next := slices.Clone(segs[k:])
	sh := s.newInspectShared(nil)
	if _, err := s.inspectGroups(context.Background(), nil, segs[:k], sh); err != nil {
		t.Fatal(err)
	}
	for i, g := range next {
		if segs[k+i] != g {
			t.Fatalf("the next job's segment %d was overwritten by %v", i, segs[k+i])
		}
	}
	found, err := s.inspectGroups(context.Background(), nil, segs[k:], sh)
	if err != nil || !slices.ContainsFunc(found, func(f Finding) bool { return string(f.secret) == tok }) {
		t.Fatalf("the next job's token not found (%v):%s", err, dump(found))
	}
}

// A token's bytes as a JSON array of numbers (JSON.stringify of a Buffer's
// bytes, Python's list(bytes)) are read as the text they spell: numbers
// are no strings, and no segment held them before.
func TestCharCodeArrayHidesNoToken(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	codes := func(text string) string {
		var n []string
		for _, c := range []byte(text) {
			n = append(n, strconv.Itoa(int(c)))
		}
		return "[" + strings.Join(n, ",") + "]"
	}
	for name, tc := range map[string]struct{ ct, body, where string }{
		"in an object":     {"application/json", `{"model":"m","data":` + codes(tok) + `}`, "json:$.data[0:40]"},
		"nested, after 7":  {"application/json", `{"a":{"b":[1,2,3,4,5,6,700,` + codes(tok)[1:] + `}}`, "json:$.a.b[7:47]"},
		"a file's bytes":   {"text/plain", strings.ReplaceAll(codes("REGION=eu-west-1\nthe token "+tok+" here\n"), ",", ", "), "json:$[0:73]"},
		"a top-level list": {"application/json", codes(tok), "json:$[0:40]"},
	} {
		res := scanTyped(t, s, tc.ct, tc.body)
		found := slices.ContainsFunc(res.Findings, func(f Finding) bool { return string(f.secret) == tok && f.Where == tc.where })
		if res.Verdict != Block || !found {
			t.Errorf("%s: verdict %v, want block with the token at %s:%s", name, res.Verdict, tc.where, dump(res.Findings))
		}
	}
	// Numbers that are no text: pixels, counts, a short list of codes.
	r := rand.New(rand.NewPCG(1, 2))
	var pixels []string
	for range 3000 {
		pixels = append(pixels, strconv.Itoa(r.IntN(256)))
	}
	for _, benign := range []string{
		`{"width":50,"pixels":[` + strings.Join(pixels, ",") + `]}`,
		`{"counts":[40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60]}`,
		`{"ok":` + codes("hello") + `}`,
	} {
		if res := scanTyped(t, s, "application/json", benign); res.Verdict != Pass {
			t.Errorf("%.50s: verdict %v:%s", benign, res.Verdict, dump(res.Findings))
		}
	}
}
