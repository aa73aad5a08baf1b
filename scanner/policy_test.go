package scanner

import "testing"

// TestActionUnmarshalText: a config names only block, redact and alert, spelled exactly.
func TestActionUnmarshalText(t *testing.T) {
	for in, want := range map[string]Action{"block": Block, "redact": Redact, "alert": Alert} {
		var a Action
		if err := a.UnmarshalText([]byte(in)); err != nil || a != want {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", in, a, err, want)
		}
	}
	for _, bad := range []string{"pass", "BLOCK", " block", "", "drop"} {
		a := Alert
		if err := a.UnmarshalText([]byte(bad)); err == nil || a != Alert {
			t.Errorf("UnmarshalText(%q) = %v, %v; want an error and no change", bad, a, err)
		}
	}
}
