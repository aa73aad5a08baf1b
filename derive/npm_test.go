package derive

import (
	"testing"
	"testing/fstest"
)

func TestNpm(t *testing.T) {
	runCases(t, []deriveCase{
		{
			name:    "private registry, git and tarball dependencies",
			dir:     "node-private",
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
			sources: []string{"npm.corp.test .npmrc:1", "registry.npm.example.test .npmrc:3", "github.com package.json:9", "npm.corp.test yarn.lock:7"},
		},
		{
			name: "package-lock and pnpm lock",
			files: fstest.MapFS{
				"package-lock.json": {Data: []byte("{\n  \"packages\": {\"node_modules/a\": {\n    \"resolved\": \"https://npm.mirror.test/a/-/a-1.tgz\"}}}\n")},
				"pnpm-lock.yaml":    {Data: []byte("packages:\n  /b@1.0.0:\n    resolution: {tarball: https://pnpm.mirror.test/b-1.0.0.tgz}\n")},
			},
			presets: map[string][]string{"npm": {"package-lock.json", "pnpm-lock.yaml"}},
			suggest: []string{"npm.mirror.test:443 lockfile resolved URL", "pnpm.mirror.test:443 lockfile tarball URL"},
			sources: []string{"npm.mirror.test package-lock.json:3", "pnpm.mirror.test pnpm-lock.yaml:3"},
		},
		{
			name:    "yarn berry registry server",
			files:   fstest.MapFS{".yarnrc.yml": {Data: []byte("nodeLinker: node-modules\nnpmRegistryServer: \"https://yarn.corp.test:8443\"\n")}},
			presets: map[string][]string{"npm": {".yarnrc.yml"}},
			suggest: []string{"yarn.corp.test:8443 .npmrc registry"},
		},
		{
			name:    "auth lines are never read",
			files:   fstest.MapFS{".npmrc": {Data: []byte("//auth.corp.test/:_authToken=do-not-put-secrets-here\n_auth=ci-bot\n")}},
			presets: map[string][]string{"npm": {".npmrc"}},
			never:   []string{"auth.corp.test"},
		},
		{
			name: "workspace, file, link and npm aliases name no host",
			files: fstest.MapFS{"package.json": {Data: []byte(`{"dependencies":{"a":"workspace:*","b":"file:../b","c":"link:../c","d":"npm:x@1",` +
				`"e":"gitlab:grp/e","f":"bitbucket:ws/f","g":"git://git.example.test/g.git"}}`)}},
			presets: map[string][]string{"npm": {"package.json"}},
			suggest: []string{"gitlab.com:443 git dependency e", "bitbucket.org:443 git dependency f"},
			never:   []string{"git.example.test"}, // git:// is neither https nor ssh
		},
		{
			name:    "not JSON: selects npm, suggests nothing",
			files:   fstest.MapFS{"package.json": {Data: []byte("{\"dependencies\": {\"a\": \"https://x.example.test/a.tgz\"")}},
			presets: map[string][]string{"npm": {"package.json"}},
			never:   []string{"x.example.test"},
		},
	})
}

func FuzzNpm(f *testing.F) {
	fuzzManifests(f, []string{"package.json", "package-lock.json", "yarn.lock", "pnpm-lock.yaml", ".npmrc", ".yarnrc.yml"},
		`{"dependencies":{"a":"github:x/y","b":"git+ssh://git@h.test/x.git","c":"https://u:p@t.test/c.tgz?x=1"},"publishConfig":{"registry":"https://r.test/"}}`,
		"{\"resolved\": \"https://r.test/a.tgz\"}",
		"a@1:\n  resolved \"https://r.test/a.tgz#abc\"\n",
		"packages:\n  /b: {tarball: 'https://r.test/b.tgz'}\n",
		"@s:registry=https://r.test/\n//r.test/:_authToken=x\n",
		"npmRegistryServer: https://r.test\n",
	)
}
