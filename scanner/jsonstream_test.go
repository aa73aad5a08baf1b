package scanner

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// gzipJSON is the headers of a gzip-compressed JSON body: the body is
// segmented as it is decompressed (streamJSON).
func gzipJSON() http.Header {
	return http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}}
}

// TestStreamedJSONFindsWhatTheWholeBodyShows: in a compressed JSON body
// walked as it is decompressed, a secret is found wherever it lies, in a
// string that crosses the first window's edge too, with the path and the
// decoding a decompressed body gives.
func TestStreamedJSONFindsWhatTheWholeBodyShows(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	filler := strings.Repeat("plain words of a long conversation. ", 100) // 3,600 bytes a message
	for _, at := range []int{0, jsonWindow - 2000, jsonWindow - len(tok)/2, 3 * jsonWindow} {
		var msgs []map[string]string
		for size := 0; size < 4*jsonWindow; size += len(filler) + 40 {
			msgs = append(msgs, map[string]string{"role": "user", "content": filler})
		}
		body, _ := json.Marshal(map[string]any{"messages": msgs})
		// Put the token at about byte at of the body: into the message
		// there, which is then one that spans the window's edge or not.
		i := bytes.Index(body[at:], []byte(`"content":"`)) + at + len(`"content":"`)
		k := min(max(at-i, 0), len(filler)-1)
		body = bytes.Join([][]byte{body[:i+k], []byte(" " + tok + " "), body[i+k:]}, nil)
		gz := compress(t, "gzip", body)
		// The walk is taken, not the fallback that decompresses the body
		// whole, and gives what that one gives.
		walked, err := streamJSON(gz, "application/json", []string{"gzip"}, s.maxBody(), nil, nil)
		if whole := bodySegments(body, "application/json", []string{"gzip"}, nil); err != nil || walked == nil ||
			!reflect.DeepEqual(views(walked), views(whole)) {
			t.Fatalf("token at %d: walked %d segments (%v), the whole body %d", at, len(walked), err, len(whole))
		}
		res, err := s.Scan(context.Background(), &Request{Header: gzipJSON(), Body: bytes.NewReader(gz)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != Block || len(res.Findings) != 1 || res.Findings[0].Rule != "github-pat" ||
			res.Findings[0].Decoding != "gzip" || !strings.HasPrefix(res.Findings[0].Where, "json:$.messages[") {
			t.Fatalf("token at %d: verdict %v:%s", at, res.Verdict, dump(res.Findings))
		}
	}
}

// TestStreamedJSONEdges: what the walk as the body is decompressed must do
// as the walk over the decompressed body did: a decompression bomb is
// refused as one, a corrupt stream fails the scan even after a whole JSON
// value, a stream of JSON values (which the walk does not read) is still
// scanned, and a secret to redact is redacted in the body compressed again.
func TestStreamedJSONEdges(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	ctx := context.Background()

	t.Run("bomb", func(t *testing.T) {
		s := testScanner(t)
		s.MaxBodyBytes = 1 << 20
		bomb := compress(t, "gzip", []byte(`{"a":"`+strings.Repeat("a", 40<<20)+`"}`))
		res, err := s.Scan(ctx, &Request{Header: gzipJSON(), Body: bytes.NewReader(bomb)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != Block || len(res.Findings) != 1 || res.Findings[0].Rule != RuleDecompressed {
			t.Fatalf("verdict %v:%s", res.Verdict, dump(res.Findings))
		}
	})
	t.Run("corrupt checksum", func(t *testing.T) {
		gz := compress(t, "gzip", []byte(`{"a":"b"}`))
		gz[len(gz)-8] ^= 0xff // the CRC-32 of the trailer
		if _, err := s.Scan(ctx, &Request{Header: gzipJSON(), Body: bytes.NewReader(gz)}); err == nil {
			t.Fatal("a gzip body with a wrong checksum was scanned as fine")
		}
	})
	t.Run("stream of values", func(t *testing.T) {
		gz := compress(t, "gzip", []byte(`{"a":"x"} {"c":"`+tok+`"}`))
		res, err := s.Scan(ctx, &Request{Header: gzipJSON(), Body: bytes.NewReader(gz)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != Block || len(res.Findings) != 1 || res.Findings[0].Where != "json:$.c" {
			t.Fatalf("verdict %v:%s", res.Verdict, dump(res.Findings))
		}
	})
	t.Run("redact", func(t *testing.T) {
		s := testScanner(t)
		s.Policy.Actions = map[string]Action{"github-pat": Redact}
		gz := compress(t, "gzip", []byte(`{"c":"x `+tok+` y","n":1}`))
		res, err := s.Scan(ctx, &Request{Header: gzipJSON(), Body: bytes.NewReader(gz)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != Redact {
			t.Fatalf("verdict %v:%s", res.Verdict, dump(res.Findings))
		}
		zr, err := gzip.NewReader(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(zr)
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil || v["c"] != "x "+strings.Repeat("*", len(tok))+" y" {
			t.Fatalf("redacted body: %v, %d bytes", err, len(out))
		}
	})
}
