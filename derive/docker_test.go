package derive

import (
	"testing"
	"testing/fstest"
)

func TestDocker(t *testing.T) {
	runCases(t, []deriveCase{
		{
			name: "Debian and Alpine stages, indexes and proxies", dir: "docker",
			presets: map[string][]string{"debian": {"Dockerfile"}, "alpine": {"Dockerfile"}},
			suggest: []string{"pypi.corp.test:443 --extra-index-url", "goproxy.corp.test:443 GOPROXY", "goproxy.backup.test:443 GOPROXY"},
			sources: []string{"pypi.corp.test Dockerfile:6", "goproxy.backup.test Dockerfile:7"},
		},
		{name: "Ubuntu and UBI", dir: "docker-ubuntu", presets: map[string][]string{"ubuntu": {"Dockerfile"}, "rhel": {"Dockerfile"}}},
		{
			name: "continuation lines keep their first line; comments are skipped",
			files: fstest.MapFS{"Containerfile": {Data: []byte("FROM fedora:40\n# RUN apk add x\nRUN dnf install -y x \\\n  && npm config set registry https://npm.corp.test/ \\\n" +
				"  && true\n")}},
			presets: map[string][]string{"fedora": {"Containerfile"}},
			sources: []string{"npm.corp.test Containerfile:3"},
		},
		{
			name: "an image from a variable and scratch have no family",
			files: fstest.MapFS{
				"Dockerfile.dev": {Data: []byte("ARG BASE\nFROM $BASE\nRUN apt-get install -y x\n")},
				"x.dockerfile":   {Data: []byte("FROM scratch\nRUN yum install -y x\n")},
			},
			presets: map[string][]string{"debian": {"Dockerfile.dev"}, "fedora": {"x.dockerfile"}},
		},
	})
}

func FuzzDocker(f *testing.F) {
	fuzzManifests(f, []string{"Dockerfile", "Containerfile", "x.dockerfile"},
		"FROM ubuntu\nRUN apt-get install -y x \\\n && pip install -i https://p.test/simple y\n",
		"FROM --platform=linux/amd64 alpine:3\nRUN apk add x\nENV GOPROXY=https://a.test|https://b.test,direct\n",
		"FROM ubi9\nRUN microdnf install x && npm config set registry https://n.test/\n\\",
	)
}
