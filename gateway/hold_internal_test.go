package gateway

import "testing"

func TestReviewPath(t *testing.T) {
	for _, tc := range []struct{ path, evidence, want string }{
		{"/v2/items", "/v2/items", "/v2/items"},
		{"/v2/hooks/ghp_x/send", "/v2/hooks/ghp_[REDACTED 40]/send", "/v2/hooks/"},
		{"/v2/hooks/k9XqT2mZ7vLp4RwA8sJd/send", "/v2/hooks/{redacted}/send", "/v2/hooks/"},
		{"/k9XqT2mZ7vLp4RwA8sJd", "/{redacted}", "/"},
		{"/a/b/long", "/a/b/lo…", "/a/b/"},
		{"x", "{redacted}", "/"},
	} {
		if got := reviewPath(tc.path, tc.evidence); got != tc.want {
			t.Errorf("reviewPath(%q, %q) = %q, want %q", tc.path, tc.evidence, got, tc.want)
		}
	}
}
