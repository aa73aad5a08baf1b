package reload

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

// A failed load changes nothing and says why; a good one is Current before
// Apply runs, and what needs a restart is logged.
func TestSwap(t *testing.T) {
	var log bytes.Buffer
	next, loadErr := 0, errors.New("config: bad thing")
	var applied []int
	s := &Swap[int]{Path: "sluice.yaml", Logger: slog.New(slog.NewTextHandler(&log, nil)),
		Load: func(string) (int, error) { return next, loadErr },
		RestartOnly: func(cur, n int) []string {
			if cur%2 != n%2 {
				return []string{"parity"}
			}
			return nil
		}}
	s.Apply = func(n int) []any {
		if cur, _ := s.Current(); cur != n {
			t.Errorf("Apply(%d) while Current is %d", n, cur)
		}
		applied = append(applied, n)
		return []any{"tunnels_closed", 0}
	}
	s.Store(1)
	if s.Reload("test") == nil || len(applied) != 0 {
		t.Fatal("a failed load was applied")
	}
	if cur, _ := s.Current(); cur != 1 || !strings.Contains(log.String(), "bad thing") {
		t.Fatalf("after a failed load: current %d, log %s", cur, log.String())
	}
	next, loadErr = 2, nil
	if err := s.Reload("test"); err != nil || !slices.Equal(applied, []int{2}) {
		t.Fatalf("a good load: %v, applied %v", err, applied)
	}
	if out := log.String(); !strings.Contains(out, "apply only after a restart") || !strings.Contains(out, "tunnels_closed=0") {
		t.Errorf("log: %s", out)
	}
	var empty Swap[int]
	if _, ok := empty.Current(); ok {
		t.Error("an empty Swap has a current value")
	}
}
