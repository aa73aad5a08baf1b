package rules

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

func TestDeriveManifests(t *testing.T) {
	tests := []struct {
		dir string
		// presets wants each selected preset with the files that selected it.
		presets map[string][]string
		// suggest are "host:port why" that must be among the suggestions.
		suggest []string
		// never are hosts that must not be suggested.
		never []string
	}{
		{
			dir:     "node-private", // scoped packages from a private registry, git and tarball deps
			presets: map[string][]string{"npm": {".npmrc", "package.json", "packages/web/package.json", "yarn.lock"}},
			suggest: []string{
				"npm.corp.test:443 .npmrc @corp registry",
				"npm.corp.test:443 publishConfig.registry",
				"npm.corp.test:443 lockfile resolved URL",
				"registry.npm.example.test:443 .npmrc registry",
				"github.com:443 git dependency forked-lib",
				"github.com:443 git dependency shorthand-lib",
				"git.corp.test:443 git dependency ssh-lib (over ssh: the gateway carries https only)",
				"downloads.vendor.test:443 tarball dependency tarball-dep",
			},
		},
		{
			dir:     "python", // --extra-index-url with credentials, custom indexes, git deps
			presets: map[string][]string{"pypi": {"poetry.lock", "pyproject.toml", "requirements-dev.txt", "requirements.txt"}},
			suggest: []string{
				"pypi.corp.test:443 --extra-index-url",
				"pypi.corp.test:443 --trusted-host",
				"pypi.corp.test:443 package index",
				"download.pytorch.test:443 --extra-index-url",
				"wheels.example.test:443 --find-links",
				"git.example.test:443 git dependency",
				"git.example.test:443 direct URL requirement",
				"files.vendor.test:443 direct URL requirement",
				"github.com:443 git dependency",
			},
			never: []string{"docs.example.test"}, // project.urls is no package source
		},
		{dir: "go-make", presets: map[string][]string{"go": {"go.mod"}}, suggest: []string{"goproxy.corp.test:443 GOPROXY"}},
		{
			dir: "rust", presets: map[string][]string{"crates": {"Cargo.toml"}},
			suggest: []string{"cargo.corp.test:443 cargo registry index", "git.example.test:443 git dependency"},
		},
		{
			dir: "ruby", presets: map[string][]string{"rubygems": {"Gemfile"}},
			suggest: []string{"gems.corp.test:443 Gemfile source", "git.example.test:443 git gem", "github.com:443 git gem"},
		},
		{
			dir: "jvm", presets: map[string][]string{"maven": {"build.gradle.kts", "pom.xml"}, "gradle": {"build.gradle.kts"}},
			suggest: []string{"maven.corp.test:443 Maven repository", "maven.corp.test:443 Gradle repository", "jitpack.example.test:443 Gradle repository"},
		},
		{
			dir: "php", presets: map[string][]string{"packagist": {"composer.json"}},
			suggest: []string{"git.example.test:443 composer repository (vcs)", "satis.corp.test:443 composer repository (composer)"},
		},
		{dir: "dotnet", presets: map[string][]string{"nuget": {"App.csproj"}}, suggest: []string{"nuget.corp.test:443 NuGet package source"}},
		{
			dir: "docker", presets: map[string][]string{"debian": {"Dockerfile"}, "alpine": {"Dockerfile"}},
			suggest: []string{"pypi.corp.test:443 --extra-index-url", "goproxy.corp.test:443 GOPROXY", "goproxy.backup.test:443 GOPROXY"},
		},
		{dir: "docker-ubuntu", presets: map[string][]string{"ubuntu": {"Dockerfile"}, "rhel": {"Dockerfile"}}},
		{
			dir: "monorepo", presets: map[string][]string{"go": {"services/api/go.mod"}},
			never: []string{"evil.example.test"}, // node_modules and vendor are not walked
		},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			d, err := Derive(os.DirFS("testdata/manifests/"+tt.dir), "")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for _, p := range d.Presets {
				got[p.Name] = p.From
				if presets[p.Name] == nil {
					t.Errorf("derived unknown preset %q", p.Name)
				}
			}
			if len(got) != len(tt.presets) {
				t.Errorf("presets = %v, want %v", got, tt.presets)
			}
			for n, from := range tt.presets {
				if !slices.Equal(got[n], from) {
					t.Errorf("preset %s from %v, want %v", n, got[n], from)
				}
			}
			var have []string
			for _, s := range d.Suggestions {
				have = append(have, s.Host+":"+strconv.Itoa(s.Port)+" "+s.Why)
				if !strings.Contains(s.Source, ":") || s.URL == "" {
					t.Errorf("suggestion without source or URL: %+v", s)
				}
				if slices.Contains(tt.never, s.Host) {
					t.Errorf("suggested %s: %+v", s.Host, s)
				}
			}
			for _, w := range tt.suggest {
				if !slices.Contains(have, w) {
					t.Errorf("missing suggestion %q in\n%s", w, strings.Join(have, "\n"))
				}
			}
			b, _ := json.Marshal(d)
			for _, secret := range []string{"do-not-put-secrets-here", "ci-bot", "_authToken"} {
				if strings.Contains(string(b), secret) {
					t.Errorf("derivation repeats %q: %s", secret, b)
				}
			}
		})
	}
}

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
		{"https://git.example.test/acme/app.git", "", "", "", true},
		{"file:///tmp/repo", "", "", "", true},
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
	d, err := Derive(nil, "https://x:do-not-put-secrets-here@github.com/acme/app.git")
	if err != nil {
		t.Fatal(err)
	}
	if d.Repo == nil || d.Repo.Path != "acme/app" || len(d.Presets) != 1 || d.Presets[0].Name != "github" || d.Presets[0].From[0] != originRemote {
		t.Fatalf("got %+v", d)
	}
	d, err = Derive(nil, "https://git.example.test/acme/app.git")
	if err != nil {
		t.Fatal(err)
	}
	if d.Repo != nil || len(d.Presets) != 0 || len(d.Suggestions) != 1 || d.Suggestions[0].Host != "git.example.test" {
		t.Fatalf("unknown git host: %+v", d)
	}
}

func TestDeriveBounds(t *testing.T) {
	big := strings.Repeat("x", maxManifestBytes+1)
	fsys := fstest.MapFS{
		"requirements.txt":              {Data: []byte(big)},
		"a/b/c/d/e/f/g/h/i/j/go.mod":    {Data: []byte("module x\n")},
		"node_modules/x/package.json":   {Data: []byte("{}")},
		"ok/Cargo.toml":                 {Data: []byte("[package]\n")},
		"weird/package.json":            {Data: []byte("{not json")},
		"weird/requirements-broken.txt": {Data: []byte("--extra-index-url\n--index-url ftp://x.test/\n-i http://[::1\n")},
	}
	d, err := Derive(fsys, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range d.Presets {
		names = append(names, p.Name)
	}
	// The oversized requirements.txt is skipped, the deep go.mod is not reached,
	// node_modules is not walked; broken files select their preset and suggest nothing.
	if !slices.Equal(names, []string{"crates", "npm", "pypi"}) || len(d.Suggestions) != 0 {
		t.Fatalf("presets %v, suggestions %+v", names, d.Suggestions)
	}
	if len(d.Skipped) != 1 || !strings.Contains(d.Skipped[0], "requirements.txt") {
		t.Fatalf("skipped = %v", d.Skipped)
	}
}

// FuzzDerive feeds arbitrary contents to every manifest parser: no panic, and every
// suggestion is a normalised host with a port and a URL without user info.
func FuzzDerive(f *testing.F) {
	names := []string{"package.json", "yarn.lock", ".npmrc", "requirements.txt", "pyproject.toml", "Cargo.toml",
		"Gemfile", "pom.xml", "build.gradle", "composer.json", "nuget.config", "Dockerfile", "Makefile", "pip.conf", "Gemfile.lock"}
	f.Add(0, []byte(`{"dependencies":{"a":"github:x/y","b":"git+ssh://git@h.test/x.git"}}`))
	f.Add(3, []byte("--extra-index-url https://u:p@pypi.corp.test/simple\nx @ git+https://h.test/x.git\n"))
	f.Add(11, []byte("FROM ubuntu\nRUN apt-get install -y x \\\n && pip install -i https://p.test/simple y\n"))
	f.Add(4, []byte("x = { git = \"https://h.test/x\" }\nextra-index-url = [\n\"https://a.test\",\n]\n"))
	f.Fuzz(func(t *testing.T, which int, data []byte) {
		if which < 0 {
			which = -which
		}
		name := names[which%len(names)]
		d, err := Derive(fstest.MapFS{name: {Data: data}}, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range d.Suggestions {
			if n, err := NormalizeHost(s.Host); err != nil || n != s.Host || s.Port < 1 || s.Port > 65535 {
				t.Fatalf("bad suggestion %+v", s)
			}
			if strings.Contains(s.URL, "@") && strings.Index(s.URL, "@") < strings.Index(s.URL+"/", s.Host) {
				t.Fatalf("suggestion URL keeps user info: %q", s.URL)
			}
		}
	})
}

func FuzzParseRemote(f *testing.F) {
	f.Add("https://github.com/acme/app.git")
	f.Add("git@gitlab.com:a/b/c.git")
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
		if _, ok := gitHosts[r.Host]; !ok {
			t.Fatalf("unknown host %q", r.Host)
		}
	})
}
