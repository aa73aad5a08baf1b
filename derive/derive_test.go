package derive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sluice-egress/sluice/rules"
)

// deriveCase is one named case of an ecosystem's table test: a repository (a directory
// of testdata/manifests or files given inline) and what it must derive.
type deriveCase struct {
	name string
	// dir is a directory of testdata/manifests; files are used when it is "".
	dir   string
	files fstest.MapFS
	// presets wants each selected preset with the files that selected it, and no other.
	presets map[string][]string
	// suggest are "host:port why" that must be among the suggestions.
	suggest []string
	// sources are "host source" pairs that must be among the suggestions.
	sources []string
	// never are hosts that must not be suggested.
	never []string
}

// runCases runs an ecosystem's table.
func runCases(t *testing.T, tests []deriveCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fsys fstest.MapFS
			if tt.dir != "" {
				fsys = mustReadDir(t, "testdata/manifests/"+tt.dir)
			} else {
				fsys = tt.files
			}
			d, err := Derive(fsys, "")
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, fsys, d)
			got := map[string][]string{}
			for _, p := range d.Presets {
				got[p.Name] = p.From
			}
			if len(got) != len(tt.presets) {
				t.Errorf("presets = %v, want %v", got, tt.presets)
			}
			for n, from := range tt.presets {
				if !slices.Equal(got[n], from) {
					t.Errorf("preset %s from %v, want %v", n, got[n], from)
				}
			}
			var have, sources []string
			for _, s := range d.Suggestions {
				have = append(have, s.Host+":"+strconv.Itoa(s.Port)+" "+s.Why)
				sources = append(sources, s.Host+" "+s.Source)
				if slices.Contains(tt.never, s.Host) {
					t.Errorf("suggested %s: %+v", s.Host, s)
				}
			}
			for _, w := range tt.suggest {
				if !slices.Contains(have, w) {
					t.Errorf("missing suggestion %q in\n%s", w, strings.Join(have, "\n"))
				}
			}
			for _, w := range tt.sources {
				if !slices.Contains(sources, w) {
					t.Errorf("missing source %q in\n%s", w, strings.Join(sources, "\n"))
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

// mustReadDir loads a testdata repository into memory, so that checkInvariants can
// count its files' lines.
func mustReadDir(tb testing.TB, dir string) fstest.MapFS {
	tb.Helper()
	fsys := fstest.MapFS{}
	root := os.DirFS(dir)
	err := fs.WalkDir(root, ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		data, err := fs.ReadFile(root, p)
		fsys[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return fsys
}

var knownPresets = func() map[string]bool {
	m := map[string]bool{}
	for _, p := range rules.Presets() {
		m[p.Name] = true
	}
	return m
}()

// checkInvariants checks what must hold for any repository, however hostile: every
// preset is known and selected by a file of the repository (or the remote); every
// suggestion is a normalised host and port, a URL without user info or query, at a line
// within its file; and the policy turns no suggestion into an entry.
func checkInvariants(tb testing.TB, fsys fstest.MapFS, d *Derivation) {
	tb.Helper()
	for _, p := range d.Presets {
		if !knownPresets[p.Name] {
			tb.Fatalf("derived unknown preset %q", p.Name)
		}
		for _, f := range p.From {
			if _, ok := fsys[f]; !ok && f != originRemote {
				tb.Fatalf("preset %s from %q, which is no file of the repository", p.Name, f)
			}
		}
	}
	for _, s := range d.Suggestions {
		if n, err := rules.NormalizeHost(s.Host); err != nil || n != s.Host || s.Port < 1 || s.Port > 65535 {
			tb.Fatalf("bad suggestion %+v", s)
		}
		if u, err := url.Parse(s.URL); err == nil && u.User != nil {
			tb.Fatalf("suggestion URL keeps user info: %q", s.URL)
		}
		if strings.Contains(s.URL, "?") || s.URL == "" {
			tb.Fatalf("suggestion URL %q is empty or keeps its query", s.URL)
		}
		if s.Source == originRemote {
			continue
		}
		i := strings.LastIndex(s.Source, ":")
		line, err := strconv.Atoi(s.Source[i+1:])
		f, ok := fsys[s.Source[:max(i, 0)]]
		// Line 0: a JSON value found by decoding but not as written (escaped).
		if i < 0 || err != nil || !ok || line < 0 || line > bytes.Count(f.Data, []byte("\n"))+1 {
			tb.Fatalf("suggestion source %q is no line of the repository's files", s.Source)
		}
	}
	checkNoEntries(tb, d)
}

// checkNoEntries resolves the derivation for a class that allows nothing itself, once
// permitting no derived preset and once permitting all: suggestions never become
// entries, and every entry comes from a derived preset.
func checkNoEntries(tb testing.TB, d *Derivation) {
	tb.Helper()
	var all []string
	for _, p := range d.Presets {
		all = append(all, p.Name)
	}
	for _, permit := range [][]string{nil, all} {
		pol := &rules.Policy{Tenants: map[string]*rules.Tenant{
			"t": {Classes: map[string]*rules.Class{"c": {Derive: rules.DeriveConfig{Presets: permit}}}},
		}}
		p, err := rules.ResolvePolicy(rules.PolicyInput{Policy: pol, Tenant: "t", Class: "c", Derived: d.Policy()})
		if err != nil {
			tb.Fatal(err)
		}
		if len(p.Passthrough) != 0 {
			tb.Fatalf("derivation gave passthrough entries: %+v", p.Passthrough)
		}
		for _, en := range p.Allow {
			if en.Origin.Kind != rules.OriginDerived || !slices.Contains(permit, en.Origin.Preset.Name) {
				tb.Fatalf("entry %s not from a permitted derived preset: %+v", en.Host, en.Origin)
			}
		}
		if permit == nil && len(p.Suggestions) != len(d.Suggestions) {
			tb.Fatalf("with nothing allowed, %d of %d suggestions left", len(p.Suggestions), len(d.Suggestions))
		}
	}
}

// hostile are contents no manifest should hold: a line longer than the line reader's
// first buffer, NULs, deep nesting, invalid UTF-8, a URL with credentials, port and
// query. They seed every fuzz test; they stay small so that the fuzzer's minimisation
// of what they lead to stays quick (TestHostile feeds the huge ones).
var hostile = [][]byte{
	nil,
	append(bytes.Repeat([]byte("a"), 70<<10), []byte(" https://long.example.test/\n")...),
	[]byte("\x00\x00https://nul.example.test/\x00\n\x00"),
	[]byte(strings.Repeat("[", 1000) + strings.Repeat("{", 1000)),
	[]byte(strings.Repeat(`{"a":`, 500) + `"https://deep.example.test/"` + strings.Repeat("}", 500)),
	[]byte("\xff\xfe\xc3\x28 https://\xe2\x82.example.test/ \xed\xa0\x80\n"),
	[]byte("https://user:do-not-put-secrets-here@h.example.test:99999/p?q=1#f\n"),
	[]byte(strings.Repeat("\\\n", 1000)),
	[]byte(strings.Repeat("\n", 1000)),
}

// huge are hostile contents at the size limit, too large to seed a fuzz test.
var huge = [][]byte{
	bytes.Repeat([]byte("x"), maxManifestBytes),
	append(bytes.Repeat([]byte(" "), maxManifestBytes-40), []byte("--index-url https://end.example.test/\n")...),
	[]byte(strings.Repeat("\n", maxManifestBytes)),
	[]byte(strings.Repeat(`{"a":`, 100000) + strings.Repeat("}", 100000)),
	[]byte(strings.Repeat("[", 1<<20)),
	[]byte(strings.Repeat("\\\n", 1<<19)),
	bytes.Repeat([]byte("\x00\xff"), 1<<20),
}

// TestHostile feeds the huge contents to every manifest of the table: no panic, and
// the invariants hold.
func TestHostile(t *testing.T) {
	names := []string{"package.json", "package-lock.json", "yarn.lock", "pnpm-lock.yaml", ".npmrc", "requirements.txt",
		"pyproject.toml", "Pipfile.lock", "pip.conf", "go.mod", "Cargo.toml", "Cargo.lock", ".cargo/config.toml", "Gemfile",
		"Gemfile.lock", "pom.xml", "build.gradle", "gradle-wrapper.properties", "composer.json", "composer.lock", "App.csproj",
		"nuget.config", "Dockerfile", "Makefile"}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			for i, data := range huge {
				fsys := fstest.MapFS{n: {Data: data}}
				d, err := Derive(fsys, "")
				if err != nil {
					t.Fatalf("case %d: %v", i, err)
				}
				checkInvariants(t, fsys, d)
			}
		})
	}
}

// fuzzManifests fuzzes the parsers of the files names: seeds, then the hostile
// contents under each name, then whatever the fuzzer makes; checkInvariants must hold.
func fuzzManifests(f *testing.F, names []string, seeds ...string) {
	for _, n := range names {
		if !IsManifest(n) {
			f.Fatalf("%s is no manifest", n)
		}
	}
	for i, s := range seeds {
		f.Add(i, []byte(s))
	}
	for i, h := range hostile {
		f.Add(i, h)
	}
	f.Fuzz(func(t *testing.T, which int, data []byte) {
		if which < 0 {
			which = -(which + 1)
		}
		fsys := fstest.MapFS{names[which%len(names)]: {Data: data}}
		d, err := Derive(fsys, "")
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, fsys, d)
	})
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

func TestDeriveSuggestionLimit(t *testing.T) {
	var b strings.Builder
	for i := range maxSuggestions + 10 {
		fmt.Fprintf(&b, "--extra-index-url https://h%d.example.test/\n", i)
	}
	d, err := Derive(fstest.MapFS{"requirements.txt": {Data: []byte(b.String())}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Suggestions) != maxSuggestions || !slices.Contains(d.Skipped, fmt.Sprintf("suggestions beyond %d", maxSuggestions)) {
		t.Fatalf("%d suggestions, skipped %v", len(d.Suggestions), d.Skipped)
	}
}

// TestDerivationJSON keeps the stored form: a run's record holds it across restarts.
func TestDerivationJSON(t *testing.T) {
	d := &Derivation{Derived: rules.Derived{
		Presets:     []rules.DerivedPreset{{Name: "npm", From: []string{"package.json"}}},
		Repo:        &rules.GitRepo{Host: "github.com", Path: "acme/app", Preset: "github"},
		Suggestions: []rules.Suggestion{{Host: "h.example.test", Port: 443, URL: "https://h.example.test/", Source: "package.json:2", Why: "w"}},
	}, Skipped: []string{"x: unreadable"}}
	const want = `{"presets":[{"name":"npm","from":["package.json"]}],"repo":{"host":"github.com","path":"acme/app","preset":"github"},` +
		`"suggestions":[{"host":"h.example.test","port":443,"url":"https://h.example.test/","source":"package.json:2","why":"w"}],"skipped":["x: unreadable"]}`
	b, err := json.Marshal(d)
	if err != nil || string(b) != want {
		t.Fatalf("got %s, %v\nwant %s", b, err, want)
	}
	var back Derivation
	if err := json.Unmarshal(b, &back); err != nil || back.Repo == nil || back.Repo.Path != "acme/app" || len(back.Skipped) != 1 {
		t.Fatalf("round trip: %+v %v", back, err)
	}
	if (*Derivation)(nil).Policy() != nil || d.Policy() != &d.Derived {
		t.Fatal("Policy: want nil for nil, the embedded value otherwise")
	}
}

func TestIsManifest(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"package.json", true}, {"a/b/package-lock.json", true}, {"yarn.lock", true}, {".yarnrc.yml", true},
		{"requirements.txt", true}, {"requirements-dev.txt", true}, {"CONSTRAINTS.txt", true},
		{"requirements/base.txt", true}, {"requirements/README.md", false}, {"requirements.in", false},
		{"go.mod", true}, {"go.sum", false}, {"Cargo.lock", true}, {".cargo/config.toml", true},
		{"sub/.cargo/config.toml", true}, {"sub/.cargo/config", false}, {"x.gemspec", true},
		{"pom.xml", true}, {"settings.gradle.kts", true}, {"gradle/wrapper/gradle-wrapper.properties", true},
		{"composer.lock", true}, {"App.CSPROJ", true}, {"NuGet.Config", true},
		{"Dockerfile.dev", true}, {"build.dockerfile", true}, {"dockerfile", false},
		{"GNUmakefile", true}, {"rules.mk", true}, {".envrc", true},
		{"README.md", false}, {"main.go", false}, {"", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if got := IsManifest(tt.path); got != tt.want {
				t.Fatalf("IsManifest(%q) = %v", tt.path, got)
			}
		})
	}
}

func TestSkipDir(t *testing.T) {
	for name, want := range map[string]bool{"node_modules": true, ".git": true, "vendor": true, "src": false, "": false} {
		if SkipDir(name) != want {
			t.Errorf("SkipDir(%q) = %v", name, !want)
		}
	}
}

// FuzzDerive feeds arbitrary contents to every kind of manifest at once, in one
// repository, with a remote.
func FuzzDerive(f *testing.F) {
	names := []string{"package.json", "yarn.lock", ".npmrc", "requirements.txt", "pyproject.toml", "Cargo.toml",
		"Gemfile", "pom.xml", "build.gradle", "composer.json", "nuget.config", "Dockerfile", "Makefile", "pip.conf", "Gemfile.lock"}
	f.Add([]byte(`{"dependencies":{"a":"github:x/y","b":"git+ssh://git@h.test/x.git"}}`), "https://github.com/acme/app.git")
	f.Add([]byte("--extra-index-url https://u:p@pypi.corp.test/simple\nx @ git+https://h.test/x.git\n"), "git@h.test:x/y")
	for _, h := range hostile {
		f.Add(h, "")
	}
	f.Fuzz(func(t *testing.T, data []byte, remote string) {
		fsys := fstest.MapFS{}
		for _, n := range names {
			fsys["sub/"+n] = &fstest.MapFile{Data: data}
		}
		d, err := Derive(fsys, remote)
		if err != nil {
			if _, rerr := ParseRemote(remote); rerr == nil {
				t.Fatalf("remote %q parses, yet Derive fails: %v", remote, err)
			}
			return
		}
		checkInvariants(t, fsys, d)
	})
}
