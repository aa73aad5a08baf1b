package dashboard

import (
	"strings"
	"testing"
	"time"
)

func TestBarChart(t *testing.T) {
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	pts := []point{
		{start, "deny", 3}, {start.Add(time.Hour), "deny", 1}, {start.Add(time.Hour), `<script>alert(1)</script>`, 2},
		{start.Add(-time.Hour), "deny", 100}, // before the first bucket: dropped
		{start.Add(5 * time.Hour), "deny", 100},
	}
	series := seriesFrom(start, time.Hour, 4, pts, 8)
	if len(series) != 2 || series[0].Name != "deny" || series[0].Values[0] != 3 || series[0].Values[1] != 1 {
		t.Fatalf("series %+v", series)
	}
	svg := string(BarChart{Start: start, Bucket: time.Hour, Series: series}.SVG())
	if strings.Contains(svg, "<script") || !strings.Contains(svg, "&lt;script&gt;") {
		t.Fatalf("series name not escaped:\n%s", svg)
	}
	if n := strings.Count(svg, "<rect "); n != 3+2 { // three bars, two legend swatches
		t.Fatalf("%d rects:\n%s", n, svg)
	}
	if !strings.Contains(svg, `>3</text>`) { // the maximum stacked total labels the axis
		t.Fatalf("axis max missing:\n%s", svg)
	}
	empty := string(BarChart{Start: start, Bucket: time.Hour}.SVG())
	if !strings.Contains(empty, "no incidents") {
		t.Fatal("empty chart says nothing")
	}
}

func TestSeriesOther(t *testing.T) {
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var pts []point
	for i, k := range []string{"a", "b", "c", "d", "e"} {
		pts = append(pts, point{start, k, int64(10 - i)})
	}
	s := seriesFrom(start, time.Hour, 1, pts, 3)
	if len(s) != 3 || s[0].Name != "a" || s[1].Name != "b" || s[2].Name != "other" || s[2].Values[0] != 8+7+6 {
		t.Fatalf("%+v", s)
	}
}
