package scanner

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

func TestJoinedArrays(t *testing.T) {
	seg := func(where, text string) *segment { return &segment{where: where, text: text, body: true} }
	segs := []*segment{
		seg("json:$.model", "model: m"),
		seg("json:$.x[0]", "ghp_"), seg("json:$.x[1]", "AbCd"), seg("json:$.x[2]", "EfGh"), seg("json:$.x[3]", "1234"),
		seg("json:$.x[4]", "a string longer than a piece"), // ends the run
		seg("json:$.y[0]", "abcdefgh"), seg("json:$.y[1]", "ijklmnop"), seg("json:$.y[2]", "q"), // three pieces: too few
		seg("json:$.z[0]", "aaaa"), seg("json:$.z[1]", "bbbb"), seg("json:$.z[3]", "cccc"), seg("json:$.z[4]", "dddd"), // a gap
		seg(`json:$["k[1]"]`, "v"), seg("header:X-A", "X-A: b"),
	}
	got := joinedArrays(segs)
	if len(got) != 1 || got[0].where != "json:$.x[0:4]" || got[0].text != "ghp_AbCdEfGh1234" || !got[0].body {
		for _, g := range got {
			t.Logf("%s %q", g.where, g.text)
		}
		t.Fatalf("joinedArrays gave %d segments, want json:$.x[0:4] %q", len(got), "ghp_AbCdEfGh1234")
	}
}

// A token cut into the strings of a JSON array, a character or a few at a
// time, is found; an array of tags is no finding.
func TestArrayPiecesHideNoToken(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	pieces := func(n int) string {
		var p []string
		for i := 0; i < len(tok); i += n {
			p = append(p, tok[i:min(i+n, len(tok))])
		}
		return `{"model":"m","x":["` + strings.Join(p, `","`) + `"]}`
	}
	scan := func(body string) *Result {
		t.Helper()
		res, err := s.Scan(context.Background(), &Request{Header: http.Header{"Content-Type": {"application/json"}}, Body: strings.NewReader(body)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
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
	if res := scan(`{"tags":["go","rust","js","py","c","java","ruby","perl","lua"]}`); res.Verdict != Pass {
		t.Errorf("an array of tags: verdict %v:%s", res.Verdict, dump(res.Findings))
	}
}
