package scanner

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// segView is what a segment shows the rules and the findings.
type segView struct {
	Where, Text string
	Chain       []string
	Body        bool
}

func views(segs []*segment) []segView {
	var out []segView
	for _, g := range segs {
		out = append(out, segView{g.where, g.text, g.chain, g.body})
	}
	return out
}

// TestJSONSegmentsFast: the single-pass walk gives the decoder's segments,
// escapes (surrogate pairs, lone surrogates, invalid UTF-8) and nesting included.
func TestJSONSegmentsFast(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"chat", `{"model":"m","temperature":0.2,"stream":false,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}`},
		{"nesting", `{"a":[[1,"x",[{"b":{"c":["d",null,true,{"e":"f"}]}}]],"g"],"h":{}, "i":[]}`},
		{"escapes", `{"k\"q":"a\\b\/c\n\t\r\b\f\u0041\u00e9\u20ac","x y":"\ud83d\ude00 pair","lone":"\ud800 hi \udc00","rev":"\udc00\ud800","bad":"\ud800\u0041"}`},
		{"unicode", "{\"ключ\":\"значение \xf0\x9f\x98\x80\",\"1a\":\"v\",\"\":\"empty key\",\"_b2\":\"w\"}"},
		{"invalid utf8", "{\"a\":\"x\xff\xfey\",\"b\xc3\":\"\xed\xa0\x80\"}"},
		{"scalars", ` "top" `},
		{"number top", `12.5e3`},
		{"array top", ` [ "a" , 1 , -2.5E+3 , "b" ] `},
		{"colon in value", `{"a":"b:c","d":["e",":"],"f":"\":"}`},
		{"key then space", "{\"a\" \n : \"b\" , \"c\"\t:\"d\"}"},
		{"stream", `{"a":"b"} {"c":"d"}`},
		{"broken", `{"a":"b"`},
		{"trailing", `{"a":"b"}]`},
		{"empty", ``},
		{"trailing comma", `{"a":"b",}`},
		{"missing comma", `["a" "b"]`},
		{"bad number", `{"a":01,"b":"c"}`},
		{"bad literal", `["a",tru]`},
		{"control byte", "[\"a\tb\"]"},
		{"bad escape", `["\x41"]`},
		{"short u", `["\u12"]`},
		{"key in array", `["a":"b"]`},
		{"value as key", `{"a":"b":"c"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chain := []string{"gzip"}
			fast, okF := jsonSegments([]byte(tc.in), chain, nil)
			slow, okS := jsonSegmentsDecoder([]byte(tc.in), chain)
			if okF != okS || !reflect.DeepEqual(views(fast), views(slow)) {
				t.Fatalf("fast %v %+v\nslow %v %+v", okF, views(fast), okS, views(slow))
			}
		})
	}
	for _, in := range []string{`{"a":"b",}`, `["a" "b"]`, `[01]`, `[tru]`, "[\"\t\"]", `["\x"]`, `{"a":"b"} {}`, `[1,]`, `{"a"}`, `-`, `1.`, `1e`} {
		if _, ok := jsonSegmentsFast([]byte(in), nil, nil); ok {
			t.Errorf("fast walk accepts %q", in)
		}
	}
	// The fast walk is taken for valid JSON: a mutated walker would be seen.
	if segs, ok := jsonSegmentsFast([]byte(`{"a":{"b c":["\u0041"]}}`), nil, nil); !ok || len(segs) != 1 ||
		segs[0].where != `json:$.a["b c"][0]` || segs[0].text != "A" {
		t.Fatalf("fast walk: %v %+v", ok, views(segs))
	}
}

// FuzzJSONSegments: on any input the walk agrees with the decoder's.
func FuzzJSONSegments(f *testing.F) {
	f.Add([]byte(`{"a":["b",{"c":"ZGF0YQ=="}]}`))
	f.Add([]byte(`{"k\"":"\ud83d\ude00\ud800\u00e9","x":[1,{"y":null}]}`))
	f.Add([]byte("[\"\xff\",\"\\ud800\\ud800\"]"))
	f.Add([]byte(`{"a":1}{"b":2}`))
	f.Add([]byte(`[-0.5e+7,true,false,null,{"a":{}},[],""]`))
	f.Add([]byte(`[01, 1., .5, -, tru, "\x", "\u12", 1 2, {"a" "b"}, {"a":1,}]`))
	f.Add([]byte(`{"a":[[116,104,101,32,113,117,105,99,107,32,98,114,111,119,110,32,102,111,120],116,104,101,32,113,117,105,99,107,32,98,114,111,119,110,32,102,111,120,300,116,104,101,32,113,117,105,99,107,32,98,114,111,119,110,32,102,111,120,"x"],"b":[116,104,101,32,113,117,105,99,107,32,98,114,111,119,110,32,102,111,120]}`)) // character codes read as text
	f.Fuzz(func(t *testing.T, b []byte) {
		whole, ok := jsonSegmentsFast(b, nil, nil)
		if ok != json.Valid(b) {
			t.Fatalf("fast walk ok %v, json.Valid %v", ok, !ok)
		}
		// The walk over a window gives what the walk over the whole does,
		// wherever the window's edges and the reads' ends fall.
		window := 1 + len(b)%13
		got, okW, err := jsonSegmentsWindow(&chunkReader{b: b, seed: uint64(len(b))}, window, len(b), nil, nil)
		if err != nil || okW != ok || ok && !reflect.DeepEqual(views(got), views(whole)) {
			t.Fatalf("window of %d: %v %v %+v\nwhole: %v %+v", window, okW, err, views(got), ok, views(whole))
		}
		fast, okF := jsonSegments(b, nil, nil)
		slow, okS := jsonSegmentsDecoder(b, nil)
		if okF != okS || !reflect.DeepEqual(views(fast), views(slow)) {
			t.Fatalf("fast %v %+v\nslow %v %+v", okF, views(fast), okS, views(slow))
		}
	})
}

// chunkReader yields b in reads of 1 to 9 bytes, at random.
type chunkReader struct {
	b    []byte
	seed uint64
	r    *rand.Rand
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.r == nil {
		c.r = rand.New(rand.NewPCG(c.seed, 7))
	}
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1+c.r.IntN(9))], c.b)
	c.b = c.b[n:]
	return n, nil
}

// TestJSONSegmentsStream: the walk through a sliding window gives the
// walk's segments over the whole text, for windows far smaller than its
// strings (which it grows to hold) and reads that end anywhere, escapes
// and multi-byte runes cut at the window's edge included; a read error
// ends it with that error.
func TestJSONSegmentsStream(t *testing.T) {
	texts := []string{
		`{"model":"m","temperature":0.2,"stream":false,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}`,
		`{"k\"q":"a\\b\/c\n\t\r\b\f\u0041\u00e9\u20ac","x y":"\ud83d\ude00 pair","lone":"\ud800 hi \udc00"}`,
		"{\"ключ\":\"значение \xf0\x9f\x98\x80\",\"1a\":\"v\"}",
		` [ "a" , 12345678901234567890 , -2.5E+3 , true, false, null, "b" ] `,
		`-12.5e3`,
		string(chatBody(64 << 10)),
		`{"a":"b"} {"c":"d"}`,
		`{"a":"b"`,
		`["a",tru]`,
		`["a",1`,
	}
	for _, text := range texts {
		b := []byte(text)
		whole, ok := jsonSegmentsFast(b, []string{"gzip"}, nil)
		for _, window := range []int{1, 2, 5, 64, 4096} {
			for seed := range uint64(3) {
				got, okW, err := jsonSegmentsWindow(&chunkReader{b: b, seed: seed}, window, len(b), []string{"gzip"}, nil)
				if err != nil || okW != ok || !reflect.DeepEqual(views(got), views(whole)) {
					t.Fatalf("%.40q, window %d: %v %v, whole %v (%d and %d segments)", text, window, okW, err, ok, len(got), len(whole))
				}
			}
		}
	}
	if segs, ok := jsonSegmentsFast([]byte(texts[0]), nil, nil); !ok || len(segs) != 5 {
		t.Fatalf("reference walk: %v, %d segments", ok, len(segs))
	}
	// A size guessed far too short (a compressed body's) still cuts the
	// texts from a few arenas, not one per string.
	var ar scanArena
	body := chatBody(1 << 20)
	if _, ok, err := jsonSegmentsWindow(bytes.NewReader(body), 4096, 16, nil, &ar); !ok || err != nil || len(ar.bufs) > 48 {
		t.Fatalf("a 1 MiB text guessed at 16 bytes: ok %v, err %v, %d arenas", ok, err, len(ar.bufs))
	}
	broken := errors.New("broken stream")
	_, ok, err := jsonSegmentsWindow(io.MultiReader(strings.NewReader(`{"a":"b","c":"d`), iotest.ErrReader(broken)), 4, 0, nil, nil)
	if ok || !errors.Is(err, broken) {
		t.Fatalf("read error: ok %v, err %v", ok, err)
	}
	// A valid text with an error after its end (gzip's checksum) is an error too.
	_, ok, err = jsonSegmentsWindow(io.MultiReader(strings.NewReader(`{"a":"b"}`), iotest.ErrReader(broken)), 64, 0, nil, nil)
	if ok || !errors.Is(err, broken) {
		t.Fatalf("error after the value: ok %v, err %v", ok, err)
	}
}

// TestStrSpecialIn: the eight-byte test of appendString flags every word
// that holds a strSpecial byte, and a word of plain bytes never.
func TestStrSpecialIn(t *testing.T) {
	for c := range 256 {
		for p := range 8 {
			w := []byte("abcdefgh")
			w[p] = byte(c)
			x := binary.LittleEndian.Uint64(w)
			if got := strSpecialIn(x); got != strSpecial[c] {
				t.Fatalf("byte %#x at %d: got %v, want %v", c, p, got, strSpecial[c])
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		x := r.Uint64()
		any := false
		for p := range 8 {
			any = any || strSpecial[byte(x>>(8*p))]
		}
		if any && !strSpecialIn(x) {
			t.Fatalf("%#x: special byte missed", x)
		}
	}
}

// BenchmarkJSONSegments is the walk alone over the JSON bench bodies.
func BenchmarkJSONSegments(b *testing.B) {
	bodies := benchBodies()
	for _, name := range []string{"json", "code", "packages"} {
		body := bodies[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, ok := jsonSegmentsFast(body, nil, nil); !ok {
					b.Fatal("not JSON")
				}
			}
		})
	}
}

// TestStrSpecialBlock: the first block of 32 bytes with a strSpecial
// byte is found, with the bit of each such byte and of no other; blocks
// with none are passed over, and bytes after the whole blocks never read.
func TestStrSpecialBlock(t *testing.T) {
	if !strMaskAsm {
		t.Skip("no assembly on this CPU")
	}
	r := rand.New(rand.NewPCG(7, 8))
	specials := []byte{'"', '\\', 0, '\n', 0x1f, 0x80, 0xc3, 0xff}
	for range 20000 {
		b := []byte(strings.Repeat("plain text, no marks ~ 0123456789 ", 8))[:r.IntN(260)]
		for range r.IntN(4) {
			if len(b) > 0 {
				b[r.IntN(len(b))] = specials[r.IntN(len(specials))]
			}
		}
		if len(b) > 0 && r.IntN(2) == 0 {
			b[r.IntN(len(b))] = byte(r.IntN(256))
		}
		wantOff, wantMask := len(b)&^31, uint32(0)
		for o := 0; o+32 <= len(b); o += 32 {
			for i, c := range b[o : o+32] {
				if strSpecial[c] {
					wantMask |= 1 << i
				}
			}
			if wantMask != 0 {
				wantOff = o
				break
			}
		}
		if off, mask := strSpecialBlock(b); off != wantOff || mask != wantMask {
			t.Fatalf("%q: block at %d, mask %032b; want %d, %032b", b, off, mask, wantOff, wantMask)
		}
	}
}

// TestAppendQuoted: the fast path quotes as strconv does.
func TestAppendQuoted(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, s := range []string{"", "a b", "@scope/pkg", "1.2.3", `q"`, `b\s`, "tab\t", "\x7f", "é", "~ !"} {
		if got, want := string(appendQuoted([]byte("x"), s)), strconv.Quote(s); got != "x"+want {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
	for range 20000 {
		b := make([]byte, r.IntN(12))
		for i := range b {
			b[i] = byte(0x18 + r.IntN(0x6c)) // around the printable range's ends
		}
		if got, want := string(appendQuoted(nil, string(b))), strconv.Quote(string(b)); got != want {
			t.Fatalf("%q: got %s, want %s", b, got, want)
		}
	}
}
