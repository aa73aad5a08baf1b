package derive

import (
	"testing"
	"testing/fstest"
)

func TestMake(t *testing.T) {
	runCases(t, []deriveCase{
		{
			name: "proxies and indexes in variables and options",
			files: fstest.MapFS{
				"GNUmakefile": {Data: []byte("export GOPROXY := https://a.corp.test|https://b.corp.test,off\ninstall:\n\tpip install --index-url=https://pip.corp.test/simple x\n")},
				"tools/x.mk":  {Data: []byte("NPM_CONFIG_REGISTRY ?= https://npm.corp.test:4873/\n")},
				".envrc":      {Data: []byte("export UV_EXTRA_INDEX_URL=\"https://uv.corp.test/simple\"\n")},
			},
			presets: nil, // build scripts select no preset
			suggest: []string{
				"a.corp.test:443 GOPROXY", "b.corp.test:443 GOPROXY", "pip.corp.test:443 --index-url",
				"npm.corp.test:4873 NPM_CONFIG_REGISTRY", "uv.corp.test:443 UV_EXTRA_INDEX_URL",
			},
			sources: []string{"pip.corp.test GNUmakefile:3"},
		},
		{
			name:  "other variables and schemes",
			files: fstest.MapFS{"Makefile": {Data: []byte("URL = https://other.example.test/\nGOPROXY=direct\n")}},
			never: []string{"other.example.test"},
		},
	})
}

func FuzzMake(f *testing.F) {
	fuzzManifests(f, []string{"Makefile", "x.mk", ".envrc"},
		"GOPROXY ?= https://a.test,direct\n\tpip install --extra-index-url https://b.test/ x\n",
		"export PIP_INDEX_URL='https://c.test/simple'\n",
	)
}
