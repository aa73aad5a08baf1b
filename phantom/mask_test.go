package phantom

import (
	"slices"
	"testing"
)

func TestMaskEnv(t *testing.T) {
	got := MaskEnv([]string{"GITHUB_TOKEN=ghp_fake", "HTTPS_PROXY=http://gw.example.test:3128", "odd"}, []string{"GITHUB_TOKEN"})
	want := []string{"GITHUB_TOKEN=**** (phantom)", "HTTPS_PROXY=http://gw.example.test:3128", "odd"}
	if !slices.Equal(got, want) {
		t.Fatalf("MaskEnv = %q, want %q", got, want)
	}
}
