package derive

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseRemote(t *testing.T) {
	tests := []struct {
		remote, host, path, preset string
		err                        bool
	}{
		{"https://github.com/acme/app.git", "github.com", "acme/app", "github", false},
		{"https://x-access-token:do-not-put-secrets-here@github.com/acme/app", "github.com", "acme/app", "github", false},
		{"git@github.com:acme/app.git", "github.com", "acme/app", "github", false},
		{"ssh://git@GitHub.com/acme/app", "github.com", "acme/app", "github", false},
		{"https://gitlab.com/group/sub/project.git", "gitlab.com", "group/sub/project", "gitlab", false},
		{"https://bitbucket.org/ws/repo.git", "bitbucket.org", "ws/repo", "bitbucket", false},
		{"https://github.com/acme", "", "", "", true},
		{"https://github.com/acme/app/extra", "", "", "", true},
		{"https://github.com/acme/../x", "", "", "", true},
		{"https://gitlab.com/a.git/b", "", "", "", true},
		{"https://git.example.test/acme/app.git", "", "", "", true},
		{"file:///tmp/repo", "", "", "", true},
		{"github.com", "", "", "", true},
		{"", "", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.remote, func(t *testing.T) {
			r, err := ParseRemote(tt.remote)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), "do-not-put-secrets-here") {
				t.Fatalf("error repeats the credential: %v", err)
			}
			if !tt.err && (r.Host != tt.host || r.Path != tt.path || r.Preset != tt.preset) {
				t.Fatalf("got %+v", r)
			}
		})
	}
}

func TestDeriveRemote(t *testing.T) {
	tests := []struct {
		name, remote string
		// preset is the preset selected ("" for none), suggest the host suggested ("" for none).
		preset, suggest string
		err             bool
	}{
		{name: "known git host", remote: "https://x:do-not-put-secrets-here@github.com/acme/app.git", preset: "github"},
		{name: "unknown git host is a suggestion", remote: "https://git.example.test/acme/app.git", suggest: "git.example.test"},
		{name: "scp-like on an unknown host", remote: "git@git.example.test:a/b.git", suggest: "git.example.test"},
		{name: "not a remote", remote: "file:///tmp/repo", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Derive(nil, tt.remote)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if err != nil {
				return
			}
			checkInvariants(t, nil, d)
			if tt.preset != "" {
				if d.Repo == nil || d.Repo.Path != "acme/app" || len(d.Presets) != 1 || d.Presets[0].Name != tt.preset || d.Presets[0].From[0] != originRemote {
					t.Fatalf("got %+v", d)
				}
			} else if d.Repo != nil || len(d.Presets) != 0 {
				t.Fatalf("selected from an unknown host: %+v", d)
			}
			if tt.suggest != "" && (len(d.Suggestions) != 1 || d.Suggestions[0].Host != tt.suggest || d.Suggestions[0].Source != originRemote) {
				t.Fatalf("suggestions %+v, want %s", d.Suggestions, tt.suggest)
			}
			if b, _ := json.Marshal(d); strings.Contains(string(b), "do-not-put-secrets-here") {
				t.Fatalf("derivation repeats the credential: %s", b)
			}
		})
	}
}

func FuzzParseRemote(f *testing.F) {
	f.Add("https://github.com/acme/app.git")
	f.Add("git@gitlab.com:a/b/c.git")
	f.Add("ssh://u:p@bitbucket.org/x/y")
	f.Add("https://github.com/" + strings.Repeat("a/", 5000))
	f.Add("git@\x00github.com:a/b")
	f.Add("https://gith\xffub.com/a/b")
	f.Fuzz(func(t *testing.T, remote string) {
		r, err := ParseRemote(remote)
		if err != nil {
			return
		}
		for _, seg := range strings.Split(r.Path, "/") {
			if seg == ".." || seg == "." || seg == "" {
				t.Fatalf("path %q from %q", r.Path, remote)
			}
		}
		gh, ok := gitHosts[r.Host]
		if !ok || gh.preset != r.Preset || !knownPresets[r.Preset] {
			t.Fatalf("host %q preset %q", r.Host, r.Preset)
		}
	})
}
