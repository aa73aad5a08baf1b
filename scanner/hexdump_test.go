package scanner

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
)

// dumpAs writes b as the dump tools write it, sixteen bytes (xxd -i:
// twelve) to a line.
func dumpAs(format string, b []byte) string {
	var out strings.Builder
	per := 16
	if format == "xxd -i" {
		per = 12
	}
	for off := 0; off < len(b); off += per {
		line := b[off:min(off+per, len(b))]
		switch format {
		case "xxd", "xxd -g1":
			fmt.Fprintf(&out, "%08x:", off)
			hexCols := 0
			for i, c := range line {
				if format == "xxd" && i%2 == 0 || format == "xxd -g1" {
					out.WriteByte(' ')
					hexCols++
				}
				fmt.Fprintf(&out, "%02x", c)
				hexCols += 2
			}
			full := 40
			if format == "xxd -g1" {
				full = 48
			}
			out.WriteString(strings.Repeat(" ", full-hexCols) + "  ")
			for _, c := range line {
				if c < ' ' || c > '~' {
					c = '.'
				}
				out.WriteByte(c)
			}
		case "hexdump -C":
			fmt.Fprintf(&out, "%08x ", off)
			for i, c := range line {
				if i == 8 {
					out.WriteByte(' ')
				}
				fmt.Fprintf(&out, " %02x", c)
			}
			out.WriteString(strings.Repeat("   ", 16-len(line)) + "  |")
			for _, c := range line {
				if c < ' ' || c > '~' {
					c = '.'
				}
				out.WriteByte(c)
			}
			out.WriteByte('|')
		case "hexdump", "od -x":
			if format == "od -x" {
				fmt.Fprintf(&out, "%07o", off)
			} else {
				fmt.Fprintf(&out, "%07x", off)
			}
			for i := 0; i < len(line); i += 2 {
				lo, hi := line[i], byte(0)
				if i+1 < len(line) {
					hi = line[i+1]
				}
				fmt.Fprintf(&out, " %02x%02x", hi, lo)
			}
		case "od -t x1":
			fmt.Fprintf(&out, "%07o", off)
			for _, c := range line {
				fmt.Fprintf(&out, " %02x", c)
			}
		case "od -c":
			fmt.Fprintf(&out, "%07o", off)
			for _, c := range line {
				switch {
				case c == '\n':
					out.WriteString("  \\n")
				case c < ' ' || c > '~':
					fmt.Fprintf(&out, " %03o", c)
				default:
					fmt.Fprintf(&out, "   %c", c)
				}
			}
		case "xxd -i":
			out.WriteString(" ")
			for i, c := range line {
				fmt.Fprintf(&out, " 0x%02x", c)
				if off+i+1 < len(b) {
					out.WriteByte(',')
				}
			}
		}
		out.WriteByte('\n')
	}
	return out.String()
}

// A token shown by xxd, hexdump or od is found wherever the lines cut it.
func TestHexdumpHidesNoToken(t *testing.T) {
	s := testScanner(t)
	tok := MustFake(t, "github-pat")
	for _, format := range []string{"xxd", "xxd -g1", "hexdump -C", "hexdump", "od -x", "od -t x1", "od -c", "xxd -i"} {
		missed := 0
		for pad := range 16 {
			file := "# " + strings.Repeat("x", pad) + "\nthe token " + tok + " goes here\n"
			res := scanTyped(t, s, "text/plain", dumpAs(format, []byte(file)))
			found := false
			for _, f := range res.Findings {
				found = found || string(f.secret) == tok
			}
			if res.Verdict != Block || !found {
				missed++
			}
		}
		if missed > 0 {
			t.Errorf("%s: the token missed at %d of 16 offsets", format, missed)
		}
	}
	// The tools themselves, where the machine has them.
	file := "REGION=eu-west-1\nthe token " + tok + " goes here\n"
	for _, cmd := range []string{"xxd", "xxd -i", "hexdump -C", "hexdump", "od -c", "od -x", "od -t x1", "od -t x4"} {
		out, err := exec.Command("sh", "-c", `printf '%s' "$0" | `+cmd, file).Output()
		if err != nil {
			t.Logf("%s: not run (%v)", cmd, err)
			continue
		}
		if res := scanTyped(t, s, "text/plain", string(out)); res.Verdict != Block {
			t.Errorf("%s's own output: verdict %v, want block", cmd, res.Verdict)
		}
	}
	// A dump of bytes that are no text, and lines that only start like one.
	r := rand.New(rand.NewPCG(3, 4))
	noise := make([]byte, 512)
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	for _, benign := range []string{
		dumpAs("xxd", noise), dumpAs("hexdump -C", noise),
		"000001 10 20 30 40 50 60 70 80 90\n000002 11 21 31 41 51 61 71 81 91\n",
		"20231201 build started\n20231201 build passed\n",
	} {
		if res := scanTyped(t, s, "text/plain", benign); res.Verdict != Pass {
			t.Errorf("%.40q: verdict %v:%s", benign, res.Verdict, dump(res.Findings))
		}
	}
}

func TestHexdumpLayer(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// xxd's last line: its text column after the padded hex columns.
		{"00000000: 6162 6364 6566 6768 696a 6b6c 6d6e 6f70  abcdefghijklmnop\n00000010: 7172 7374                                qrst\n", "abcdefghijklmnopqrst\n"},
		// hexdump -C: the text column between bars; a repeat line ends a run
		// (the bytes it stands for are not shown), and a run too short is left.
		{"00000000  61 62 63 64 65 66 67 68  69 6a 6b 6c 6d 6e 6f 70  |abcdefghijklmnop|\n*\n00000020  71 72  |qr|\n00000022\n", "abcdefghijklmnop\n"},
		// od -c: spaces, escapes and octal bytes.
		{"0000000   a   b       c  \\n   d 303 251   e   f   g   h   i   j   k   l\n0000020\n", "ab c\nd\xc3\xa9efghijkl\n"},
		// hexdump's words are little-endian.
		{"0000000 6261 6463 6665 6867 6a69 6c6b 6e6d 706f\n", "abcdefghijklmnop\n"},
		// Too short, and no dump.
		{"00000000: 6162 6364  abcd\n", ""},
		{"the 000000 line\n", ""},
	} {
		got, ok := hexdumpLayer(tc.in)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%q: got %q (%v), want %q", tc.in, got, ok, tc.want)
		}
	}
}

// FuzzHexdumpLayer: any text is read without a panic, and a dump's bytes
// are never more than its text.
func FuzzHexdumpLayer(f *testing.F) {
	f.Add(dumpAs("xxd", []byte("the token goes here, and more text after it")))
	f.Add(dumpAs("hexdump -C", []byte("the token goes here, and more text after it")))
	f.Add(dumpAs("od -c", []byte("the token\tgoes here\n\x00\xff and more")))
	f.Add("00000000: 61\n0000000\n000000 |x|\n0000000    \\q 777\n")
	f.Fuzz(func(t *testing.T, s string) {
		if d, ok := hexdumpLayer(s); ok && len(d) > len(s) {
			t.Fatalf("%d bytes from a text of %d", len(d), len(s))
		}
		dumpAhead(s)
	})
}
