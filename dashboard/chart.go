package dashboard

import (
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"
)

// Series is one stacked layer of a bar chart.
type Series struct {
	Name   string
	Values []int64 // one per bucket
}

// BarChart is a stacked bar chart over time buckets, drawn server-side as
// SVG (no script, no remote fonts: nothing the CSP would have to allow).
type BarChart struct {
	// Start of the first bucket and the bucket width.
	Start  time.Time
	Bucket time.Duration
	Series []Series
	// Width and Height in pixels; zero: 880 × 220.
	Width, Height int
}

// palette is colour-blind friendly (Okabe–Ito).
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999"}

// xmlEscape escapes text for SVG content and attribute values. Series names
// come from the store (tenant and kind names) and are treated as hostile.
func xmlEscape(s string) string {
	var b strings.Builder
	template.HTMLEscape(&b, []byte(s))
	return b.String()
}

// SVG renders the chart. Every value it interpolates is a number or
// escaped text, so the result is safe to embed as template.HTML.
func (c BarChart) SVG() template.HTML {
	w, h := c.Width, c.Height
	if w <= 0 {
		w = 880
	}
	if h <= 0 {
		h = 220
	}
	n := 0
	for _, s := range c.Series {
		n = max(n, len(s.Values))
	}
	const left, right, top, bottom = 44, 8, 10, 40
	pw, ph := w-left-right, h-top-bottom
	var maxTotal int64
	for i := range n {
		var t int64
		for _, s := range c.Series {
			if i < len(s.Values) {
				t += s.Values[i]
			}
		}
		maxTotal = max(maxTotal, t)
	}
	var b strings.Builder
	fullH := h + 20*((len(c.Series)+5)/6)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="incidents over time">`, w, fullH, w, fullH)
	// Axes and the max label.
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#888"/>`, left, top+ph, left+pw, top+ph)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#888"/>`, left, top, left, top+ph)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="end" fill="#444">%d</text>`, left-4, top+8, maxTotal)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="end" fill="#444">0</text>`, left-4, top+ph)
	if n == 0 || maxTotal == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="13" text-anchor="middle" fill="#666">no incidents in this period</text>`, left+pw/2, top+ph/2)
	}
	if n > 0 {
		bw := float64(pw) / float64(n)
		gap := min(bw*0.15, 3)
		for i := range n {
			x := float64(left) + float64(i)*bw
			y := float64(top + ph)
			for si, s := range c.Series {
				if i >= len(s.Values) || s.Values[i] == 0 {
					continue
				}
				bh := float64(ph) * float64(s.Values[i]) / float64(maxTotal)
				y -= bh
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %d</title></rect>`,
					x+gap/2, y, bw-gap, bh, palette[si%len(palette)],
					xmlEscape(c.Start.Add(time.Duration(i)*c.Bucket).UTC().Format("2006-01-02 15:04")), xmlEscape(s.Name), s.Values[i])
			}
		}
		// Up to 6 time labels.
		step := max(1, n/6)
		layout := "01-02 15:04"
		if c.Bucket >= 24*time.Hour {
			layout = "2006-01-02"
		}
		for i := 0; i < n; i += step {
			x := float64(left) + (float64(i)+0.5)*bw
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#444">%s</text>`,
				x, top+ph+16, c.Start.Add(time.Duration(i)*c.Bucket).UTC().Format(layout))
		}
	}
	// Legend, six per row.
	for si, s := range c.Series {
		x := left + (si%6)*(pw/6)
		y := h + 2 + 20*(si/6)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`, x, y-10, palette[si%len(palette)])
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" fill="#222">%s</text>`, x+16, y, xmlEscape(truncate(s.Name, 20)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// seriesFrom turns (bucket start, key, count) points into aligned series,
// named and sorted by key, with at most maxSeries-1 named series and the
// rest summed as "other".
func seriesFrom(start time.Time, bucket time.Duration, n int, points []point, maxSeries int) []Series {
	idx := map[string]int{}
	totals := map[string]int64{}
	for _, p := range points {
		totals[p.key] += p.count
	}
	keys := make([]string, 0, len(totals))
	for k := range totals {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if totals[a] != totals[b] {
			if totals[a] > totals[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var out []Series
	for i, k := range keys {
		name := k
		if name == "" {
			name = "(none)"
		}
		if i >= maxSeries-1 && len(keys) > maxSeries {
			if i == maxSeries-1 {
				out = append(out, Series{Name: "other", Values: make([]int64, n)})
			}
			idx[k] = maxSeries - 1
			continue
		}
		idx[k] = len(out)
		out = append(out, Series{Name: name, Values: make([]int64, n)})
	}
	for _, p := range points {
		i := int(p.at.Sub(start) / bucket)
		if i < 0 || i >= n {
			continue
		}
		out[idx[p.key]].Values[i] += p.count
	}
	return out
}

type point struct {
	at    time.Time
	key   string
	count int64
}
