package scanner

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/base32"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"mime/multipart"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/ulikunitz/xz"
)

// wrapLines cuts s into lines of w bytes, as base64(1) (76), PEM (64) and
// xxd -p (60) do.
func wrapLines(s string, w int, eol string) string {
	var l []string
	for i := 0; i < len(s); i += w {
		l = append(l, s[i:min(i+w, len(s))])
	}
	return strings.Join(l, eol)
}

// A token in wrapped base64 or hex is found wherever a line break cuts it:
// each line decoded alone missed it in a quarter of the positions.
func TestWrappedRunHidesNoToken(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	found := func(res *Result, enc string) bool {
		for _, f := range res.Findings {
			// base64url without '-' or '_' reads as base64, and is named so.
			if string(f.secret) == tok && (f.Decoding == enc || enc == encBase64URL && f.Decoding == encBase64) {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		name, enc string
		width     int
		encode    func([]byte) string
		eol       string
		ct        string
		wrap      func(string) string
	}{
		{"base64(1)", encBase64, 76, base64.StdEncoding.EncodeToString, "\n", "text/plain", nil},
		{"PEM width", encBase64, 64, base64.StdEncoding.EncodeToString, "\n", "text/plain", nil},
		{"CRLF", encBase64, 76, base64.StdEncoding.EncodeToString, "\r\n", "text/plain", nil},
		{"base64url", encBase64URL, 64, base64.RawURLEncoding.EncodeToString, "\n", "text/plain", nil},
		{"xxd -p", encHex, 60, hex.EncodeToString, "\n", "text/plain", nil},
		{"base32(1)", encBase32, 76, base32.StdEncoding.EncodeToString, "\n", "text/plain", nil},
		{"in a JSON string", encBase64, 76, base64.StdEncoding.EncodeToString, "\n", "application/json",
			func(b string) string { return `{"file":"` + strings.ReplaceAll(b, "\n", `\n`) + `"}` }},
		{"YAML block", encBase64, 64, base64.StdEncoding.EncodeToString, "\n  ", "text/plain",
			func(b string) string { return "data: |\n  " + b + "\n" }},
		{"after a key", encBase64, 76, base64.StdEncoding.EncodeToString, "\n", "text/plain",
			func(b string) string { return "payload=" + b }},
	} {
		missed := 0
		for pad := range 40 {
			file := "# deploy " + strings.Repeat("x", pad) + "\nREGION=eu-west-1\nthe token " + tok + " goes here\nLOG=debug\n"
			body := wrapLines(tc.encode([]byte(file)), tc.width, tc.eol)
			if tc.wrap != nil {
				body = tc.wrap(body)
			}
			if res := scanTyped(t, s, tc.ct, body); res.Verdict != Block || !found(res, tc.enc) {
				missed++
			}
		}
		if missed > 0 {
			t.Errorf("%s: the token missed at %d of 40 offsets", tc.name, missed)
		}
	}
	// Lines that are not one encoded text: a list of hashes, a certificate.
	var hashes []string
	for i := range 8 {
		hashes = append(hashes, hex.EncodeToString(bytes.Repeat([]byte{byte(i * 37), 0xa5, 0x3c, byte(i)}, 8)))
	}
	cert := wrapLines(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x30, 0x82, 0x01, 0x0a, 0xff, 0x00}, 60)), 64, "\n")
	for _, benign := range []string{strings.Join(hashes, "\n"), "-----BEGIN CERTIFICATE-----\n" + cert + "\n-----END CERTIFICATE-----\n"} {
		if res := scanTyped(t, s, "text/plain", benign); res.Verdict != Pass {
			t.Errorf("%.40q: verdict %v:%s", benign, res.Verdict, dump(res.Findings))
		}
	}
}

func TestWrappedRun(t *testing.T) {
	line := strings.Repeat("QUJD", 4) // 16 bytes
	for _, tc := range []struct {
		s      string
		joined string // "" for none
	}{
		{line + "\n" + line + "\nQUI=", line + line + "QUI="},
		{line + "\r\n" + line + "\r\nQQ==\r\n", line + line + "QQ=="},
		{line + "\n  " + line + "\n  QUJD\nnext", line + line + "QUJD"},
		{line + "\n" + line, line + line},
		{line + "\n" + line + "Q\n", ""},                        // longer than the first: another text
		{line + "\n\n" + line, ""},                              // a blank line ends it
		{line + "Q\n" + line, ""},                               // not a multiple of four
		{line + "\n" + line[:8] + "\n" + line, line + line[:8]}, // a short line is the last
	} {
		j := strings.IndexAny(tc.s, "\r\n")
		end, joined, ok := wrappedRun(tc.s, 0, j)
		if tc.joined == "" {
			if ok {
				t.Errorf("%q: joined %q, want none", tc.s, joined)
			}
			continue
		}
		if !ok || joined != tc.joined || withoutLayout(tc.s[:end]) != tc.joined {
			t.Errorf("%q: joined %q (ok %v) up to %d, want %q", tc.s, joined, ok, end, tc.joined)
		}
	}
}

// tarGz is a tarball of one file, gzipped: `tar cz`.
func tarGz(t *testing.T, name, content string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(content))}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(content))
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// A token compressed, then encoded (`gzip | base64`, `tar cz | base64`,
// `xxd -p`) is found in the inflated data.
func TestPackedRunHidesNoToken(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	file := "REGION=eu-west-1\nthe token " + tok + " goes here\n"
	packed := map[string][]byte{
		"gzip":   compress(t, "gzip", []byte(file)),
		"zlib":   compress(t, "deflate", []byte(file)),
		"zstd":   compress(t, "zstd", []byte(file)),
		"tar.gz": tarGz(t, ".env", file),
	}
	packed["xz"] = xzOf(t, []byte(file), 0)
	if x, err := exec.Command("sh", "-c", "printf '%s' \"$0\" | xz -c", file).Output(); err == nil {
		packed["xz(1)"] = x
	} else {
		t.Logf("xz not run (%v): its case is left out", err)
	}
	if bz, err := exec.Command("sh", "-c", "printf '%s' \"$0\" | bzip2 -c", file).Output(); err == nil {
		packed["bzip2"] = bz
	} else {
		t.Logf("bzip2 not run (%v): its case is left out", err)
	}
	for name, b := range packed {
		for enc, text := range map[string]string{
			encBase64:      base64.StdEncoding.EncodeToString(b),
			encBase64URL:   base64.RawURLEncoding.EncodeToString(b),
			"base64 lines": wrapLines(base64.StdEncoding.EncodeToString(b), 76, "\n"),
			encHex:         hex.EncodeToString(b),
		} {
			res := scanTyped(t, s, "text/plain", "curl -d "+text)
			found := false
			for _, f := range res.Findings {
				found = found || string(f.secret) == tok && strings.Contains(f.Decoding, " > ")
			}
			if res.Verdict != Block || !found {
				t.Errorf("%s in %s: verdict %v, want block with the token found inflated:%s", name, enc, res.Verdict, dump(res.Findings))
			}
		}
	}
	// Compressed text with no secret, and an image, pass.
	prose := compress(t, "gzip", []byte(strings.Repeat("the quick brown fox jumps over the lazy dog. ", 40)))
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0, 0, 0, 13, 'I', 'H', 'D', 'R', 1, 2, 3, 4}, 20)...)
	for name, b := range map[string][]byte{"gzipped prose": prose, "png": png} {
		if res := scanTyped(t, s, "text/plain", "data:"+base64.StdEncoding.EncodeToString(b)); res.Verdict != Pass {
			t.Errorf("%s: verdict %v:%s", name, res.Verdict, dump(res.Findings))
		}
	}
}

// Compressed runs inflate within the body limit, all of a scan's together:
// a token behind more zeros than that, or many runs that add up past it,
// are a decompression-limit finding, not text let through unread.
func TestPackedRunLimit(t *testing.T) {
	s := testScanner(t)
	s.MaxBodyBytes = 256 << 10
	tok := MustFake(t, "github-pat")
	bomb := compress(t, "gzip", append(make([]byte, 1<<20), tok...))
	small := base64.StdEncoding.EncodeToString(compress(t, "gzip", make([]byte, 100<<10)))
	for name, body := range map[string]string{
		"one run past the limit":        base64.StdEncoding.EncodeToString(bomb),
		"runs adding up past the limit": strings.Repeat(small+"\n\n", 4),
	} {
		res := scanTyped(t, s, "text/plain", body)
		limited := false
		for _, f := range res.Findings {
			limited = limited || f.Rule == RuleDecompressed && f.Kind == KindOversize
		}
		if res.Verdict != Block || !limited {
			t.Errorf("%s: verdict %v, want block by %s:%s", name, res.Verdict, RuleDecompressed, dump(res.Findings))
		}
	}
	// Many tiny compressed runs: each costs a decompressor, past maxUnpacks
	// a scan stops inflating them.
	tiny := base64.StdEncoding.EncodeToString(compress(t, "gzip", []byte("hello world")))
	for n, want := range map[int]Action{maxUnpacks: Pass, maxUnpacks + 1: Block} {
		res := scanTyped(t, s, "text/plain", strings.Repeat(tiny+" ", n))
		if res.Verdict != want {
			t.Errorf("%d tiny runs: verdict %v, want %v:%s", n, res.Verdict, want, dump(res.Findings))
		}
	}
	if res := scanTyped(t, s, "text/plain", strings.Repeat(small+"\n\n", 2)); res.Verdict != Pass {
		t.Errorf("two runs within the limit: verdict %v:%s", res.Verdict, dump(res.Findings))
	}
}

// xzOf is b in an xz stream, its dictionary as xz -6 makes it (dict 0) or
// set to dict; that block header's CRC32 is made right.
func xzOf(t *testing.T, b []byte, dict byte) []byte {
	var buf bytes.Buffer
	w, err := xz.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(b)
	w.Close()
	out := buf.Bytes()
	if dict != 0 {
		size := (int(out[12]) + 1) * 4
		h := out[12 : 12+size]
		i := bytes.Index(h, []byte{0x21, 0x01}) // the LZMA2 filter, one byte of properties
		if i < 0 {
			t.Fatal("no LZMA2 filter in the block header")
		}
		h[i+2] = dict
		binary.LittleEndian.PutUint32(h[size-4:], crc32.ChecksumIEEE(h[:size-4]))
	}
	return out
}

// An xz block that asks for a larger dictionary than any preset makes (a
// few bytes that would have the decoder reserve 4 GiB) is refused as a
// stream past the limit, not decoded and not let through unread.
func TestXZDictionaryLimit(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	for _, dict := range []byte{0, 40} { // xz -6's, and 4 GiB
		b := xzOf(t, []byte("token "+tok), dict)
		if got := xzDictsWithin(b, maxXZDict); got != (dict == 0) {
			t.Errorf("dict code %d: within the limit %v", dict, got)
		}
		res := scanTyped(t, s, "text/plain", base64.StdEncoding.EncodeToString(b))
		rule := "github-pat"
		if dict != 0 {
			rule = RuleDecompressed
		}
		found := false
		for _, f := range res.Findings {
			found = found || f.Rule == rule
		}
		if res.Verdict != Block || !found {
			t.Errorf("dict code %d: verdict %v, want block by %s:%s", dict, res.Verdict, rule, dump(res.Findings))
		}
	}
}

// A stream of many blocks whose headers state their sizes (xz -T) is read
// block header by block header: a later block that asks for 4 GiB is
// refused though the first asks for xz's usual 8 MiB.
func TestXZDictionaryLimitLaterBlock(t *testing.T) {
	text := strings.Repeat("the agent writes a patch and runs the tests again. ", 400)
	b, err := exec.Command("sh", "-c", "printf '%s' \"$0\" | xz -c -T2 --block-size=4096", text).Output()
	if err != nil {
		t.Skipf("xz not run (%v)", err)
	}
	if !xzDictsWithin(b, maxXZDict) {
		t.Fatal("xz -T's own stream refused")
	}
	// Every LZMA2 filter after the first block's header asks for 4 GiB (a
	// match inside compressed data changes nothing the walk reads); the
	// headers' CRCs are not what the walk checks.
	first := 12 + (int(b[12])+1)*4
	patched := bytes.Clone(b)
	n := 0
	for i := first; i+2 < len(patched); i++ {
		if patched[i] == 0x21 && patched[i+1] == 0x01 && patched[i+2] <= 40 {
			patched[i+2] = 40
			n++
		}
	}
	if n == 0 {
		t.Fatal("no later block header in xz -T's stream")
	}
	if xzDictsWithin(patched, maxXZDict) {
		t.Error("a later block asking for 4 GiB was let through")
	}
}

// zipOf is a zip archive of the files, deflated.
func zipOf(t *testing.T, files map[string]string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, content := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(content))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A compressed file or an archive uploaded as it is (`tar cz ~/.config |
// curl --data-binary @-`, `curl -F f=@x.zip`) is opened: no
// Content-Encoding says it is compressed, and its bytes held the token in
// none of their own.
func TestPackedBodyHidesNoToken(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	file := "REGION=eu-west-1\nGITHUB_TOKEN=" + tok + "\n"
	bodies := map[string][]byte{
		"gzip":   compress(t, "gzip", []byte(file)),
		"tar.gz": tarGz(t, ".env", file),
		"zstd":   compress(t, "zstd", []byte(file+strings.Repeat("padding that compresses ", 40))),
		"zip":    zipOf(t, map[string]string{"README": "hello", "conf/.env": file}),
		// Two gzip files one after the other are one: the token in the second.
		"two gzip members": append(compress(t, "gzip", []byte("first member\n")), compress(t, "gzip", []byte(file))...),
		"xz":               xzOf(t, []byte(file), 0), // `tar cJ`, Python's lzma.compress
	}
	layer := map[string]string{"gzip": "gzip", "tar.gz": "gzip", "zstd": "zstd", "zip": "zip", "two gzip members": "gzip", "xz": "xz"}
	for name, b := range bodies {
		var mb bytes.Buffer
		mw := multipart.NewWriter(&mb)
		p, _ := mw.CreateFormFile("file", "upload."+name)
		p.Write(b)
		mw.Close()
		for _, tc := range []struct{ ct, body string }{
			{"application/octet-stream", string(b)},
			{"", string(b)},
			{mw.FormDataContentType(), mb.String()},
		} {
			res := scanTyped(t, s, tc.ct, tc.body)
			found := false
			for _, f := range res.Findings {
				found = found || string(f.secret) == tok && f.Decoding == layer[name]
			}
			if res.Verdict != Block || !found {
				t.Errorf("%s as %q: verdict %v, want block with the token found inside:%s", name, tc.ct, res.Verdict, dump(res.Findings))
			}
		}
	}
	for name, b := range map[string][]byte{
		"gzipped prose": compress(t, "gzip", []byte(strings.Repeat("the quick brown fox jumps over the lazy dog. ", 40))),
		"zip of prose":  zipOf(t, map[string]string{"a.txt": "hello world", "b/c.md": "# notes\nnothing here\n"}),
	} {
		if res := scanTyped(t, s, "application/octet-stream", string(b)); res.Verdict != Pass {
			t.Errorf("%s: verdict %v:%s", name, res.Verdict, dump(res.Findings))
		}
	}
	// Past the budget: a zip bomb's file, and more files than are read.
	many := map[string]string{}
	for i := range maxZipFiles + 1 {
		many[strconv.Itoa(i)] = ""
	}
	for name, tc := range map[string]struct {
		limit int64
		b     []byte
	}{
		"a file past the limit": {256 << 10, zipOf(t, map[string]string{"big": strings.Repeat("\x00", 1<<20) + tok})},
		"too many files":        {0, zipOf(t, many)},
	} {
		s.MaxBodyBytes = tc.limit
		res := scanTyped(t, s, "application/zip", string(tc.b))
		limited := false
		for _, f := range res.Findings {
			limited = limited || f.Rule == RuleDecompressed
		}
		if res.Verdict != Block || !limited {
			t.Errorf("%s: verdict %v, want block by %s:%s", name, res.Verdict, RuleDecompressed, dump(res.Findings))
		}
	}
}

// A secret found in compressed data that the policy redacts is blocked: the
// data is not compressed again with the mask, and the check after
// redaction still finds it, also where gzip stored it as it is.
func TestPackedRunRedactionBlocks(t *testing.T) {
	s := testScanner(t)
	s.Policy.Actions = map[string]Action{"github-pat": Redact}
	tok := MustFake(t, "github-pat")
	var stored bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&stored, gzip.NoCompression)
	zw.Write([]byte("token=" + tok))
	zw.Close()
	for name, b := range map[string][]byte{"deflated": compress(t, "gzip", []byte("token="+tok)), "stored": stored.Bytes()} {
		if res := scanTyped(t, s, "text/plain", "data="+base64.StdEncoding.EncodeToString(b)); res.Verdict != Block {
			t.Errorf("%s: verdict %v, want block:%s", name, res.Verdict, dump(res.Findings))
		}
	}
}
