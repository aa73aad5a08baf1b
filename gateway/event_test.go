package gateway

import (
	"strings"
	"testing"
)

func TestEventPathHidesDataSegments(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "/v1/chat/completions", "/v1/chat/completions"},
		{"version and ids", "/repos/acme/widget/pulls/1234", "/repos/acme/widget/pulls/1234"},
		{"token segment", "/hooks/k9XqT2mZ7vLp4RwA8sJd/send", "/hooks/{redacted}/send"},
		{"long segment", "/x/" + strings.Repeat("y", 41), "/x/{redacted}"},
		{"long word", "/documentation-for-things", "/documentation-for-things"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := eventPath(tc.in); got != tc.want {
				t.Fatalf("eventPath(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	if got := eventPath("/" + strings.Repeat("ab/", 200)); len(got) > maxEventPath+len("…") {
		t.Fatalf("long path kept %d bytes", len(got))
	}
}
