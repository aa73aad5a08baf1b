package derive

import (
	"testing"
	"testing/fstest"
)

func TestRust(t *testing.T) {
	runCases(t, []deriveCase{
		{
			name: "private registry and git dependency", dir: "rust",
			presets: map[string][]string{"crates": {"Cargo.toml"}},
			suggest: []string{"cargo.corp.test:443 cargo registry index", "git.example.test:443 git dependency"},
			sources: []string{"cargo.corp.test .cargo/config.toml:2"},
		},
		{
			name: "lockfile sources",
			files: fstest.MapFS{"Cargo.lock": {Data: []byte("[[package]]\nname = \"a\"\nsource = \"git+https://git.lock.test/a?branch=x#0123\"\n" +
				"[[package]]\nsource = \"sparse+https://sparse.lock.test/index/\"\n[[package]]\nsource = \"path+file:///x\"\n")}},
			presets: map[string][]string{"crates": {"Cargo.lock"}},
			suggest: []string{"git.lock.test:443 lockfile source", "sparse.lock.test:443 lockfile source"},
		},
		{
			name:    "cargo config in a sub-crate, commented keys",
			files:   fstest.MapFS{"sub/.cargo/config.toml": {Data: []byte("# index = \"https://commented.example.test/\"\n[registries.x]\nindex = \"https://sub.corp.test/index\"\n")}},
			suggest: []string{"sub.corp.test:443 cargo registry index"},
			never:   []string{"commented.example.test"},
		},
	})
}

func FuzzRust(f *testing.F) {
	fuzzManifests(f, []string{"Cargo.toml", "Cargo.lock", ".cargo/config.toml"},
		"[dependencies]\nx = { git = \"https://h.test/x\", registry-index = \"sparse+https://r.test/\" }\n",
		"source = \"registry+https://r.test/index\"\n",
		"[registries.a]\nindex = \"https://r.test/\"\n",
	)
}
