package derive

import (
	"testing"
	"testing/fstest"
)

func TestPython(t *testing.T) {
	runCases(t, []deriveCase{
		{
			name:    "credentials in an index URL, custom indexes, git dependencies",
			dir:     "python",
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
			sources: []string{"pypi.corp.test requirements.txt:3", "download.pytorch.test pyproject.toml:19"},
			never:   []string{"docs.example.test"}, // project.urls is no package source
		},
		{
			name: "pip.conf with continuation lines",
			files: fstest.MapFS{"pip.conf": {Data: []byte("[global]\nindex-url = https://pip.corp.test/simple\nextra-index-url =\n    https://a.corp.test/simple\n" +
				"    https://b.corp.test/simple\ntimeout = 60\n    https://not-a-value.example.test/\n")}},
			presets: nil, // pip.conf selects nothing by itself
			suggest: []string{"pip.corp.test:443 --index-url", "a.corp.test:443 --extra-index-url", "b.corp.test:443 --extra-index-url"},
			sources: []string{"b.corp.test pip.conf:5"},
			never:   []string{"not-a-value.example.test"},
		},
		{
			name: "option spellings and trusted host with a port",
			files: fstest.MapFS{
				"constraints.txt":       {Data: []byte("-i=https://i.example.test/simple\n--find-links=http://f.example.test/\n--trusted-host t.example.test:8080\nx==1 # https://comment.example.test/\n")},
				"requirements/base.txt": {Data: []byte("-e git+ssh://git@git.corp.test/team/pkg.git#egg=pkg\nfile:///local/wheel.whl\n")},
			},
			presets: map[string][]string{"pypi": {"constraints.txt", "requirements/base.txt"}},
			suggest: []string{
				"i.example.test:443 --index-url", "f.example.test:80 --find-links", "t.example.test:8080 --trusted-host",
				"git.corp.test:443 direct URL requirement (over ssh: the gateway carries https only)",
			},
			never: []string{"comment.example.test"},
		},
		{
			name:    "Pipfile and its lock",
			files:   fstest.MapFS{"Pipfile": {Data: []byte("[[source]]\nurl = \"https://pipenv.corp.test/simple\"\n")}, "Pipfile.lock": {Data: []byte(`{"_meta":{"sources":[{"url": "https://lock.corp.test/simple"}]}}`)}},
			presets: map[string][]string{"pypi": {"Pipfile", "Pipfile.lock"}},
			suggest: []string{"pipenv.corp.test:443 package index", "lock.corp.test:443 package index"},
		},
		{
			name:    "an option without a value, other schemes",
			files:   fstest.MapFS{"requirements.txt": {Data: []byte("--extra-index-url\n--index-url ftp://x.example.test/\n-i http://[::1\n")}},
			presets: map[string][]string{"pypi": {"requirements.txt"}},
			never:   []string{"x.example.test"},
		},
	})
}

func FuzzPython(f *testing.F) {
	fuzzManifests(f, []string{"requirements.txt", "pyproject.toml", "Pipfile", "Pipfile.lock", "pip.conf", "setup.cfg"},
		"--extra-index-url https://u:p@pypi.corp.test/simple\nx @ git+https://h.test/x.git\n--trusted-host h.test:1\n",
		"x = { git = \"https://h.test/x\" }\nextra-index-url = [\n\"https://a.test\",\n]\n",
		"[[source]]\nurl = 'https://s.test/simple'\n",
		`{"_meta":{"sources":[{"url":"https://s.test/simple"}]}}`,
		"[global]\nindex-url = https://i.test/\n  https://c.test/\n",
	)
}
