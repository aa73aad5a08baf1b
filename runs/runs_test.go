package runs

import "testing"

func TestStripUserinfo(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://x-access-token:ghs_SECRET@github.com/acme/app.git", "https://github.com/acme/app.git"},
		{"https://github.com/acme/app.git", "https://github.com/acme/app.git"},
		{"git@github.com:acme/app.git", "git@github.com:acme/app.git"},
		{"", ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := StripUserinfo(tc.in); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
