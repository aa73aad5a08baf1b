package derive

import (
	"path"
	"regexp"
	"strings"
)

// dockerManifests: Dockerfiles and Containerfiles select the distribution presets their
// package manager commands need.
var dockerManifests = []manifest{
	{func(_, base, lower string) bool {
		return base == "Dockerfile" || base == "Containerfile" || strings.HasPrefix(base, "Dockerfile.") || strings.HasSuffix(lower, ".dockerfile")
	}, parseDockerfile},
}

var (
	fromRE     = regexp.MustCompile(`(?i)^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)`)
	aptRE      = regexp.MustCompile(`\bapt(?:-get)?\s+(?:[-\w=]+\s+)*(?:install|update|upgrade|dist-upgrade)\b`)
	apkRE      = regexp.MustCompile(`\bapk\s+(?:[-\w=]+\s+)*(?:add|update|upgrade)\b`)
	dnfRE      = regexp.MustCompile(`\b(?:dnf|yum|microdnf)\s+(?:[-\w=]+\s+)*(?:install|update|upgrade|makecache)\b`)
	npmRegSetR = regexp.MustCompile(`config\s+set\s+registry\s+["']?(https?://[^"'\s]+)`)
)

// dockerFamily tells the distribution of a base image name, "" when unknown.
func dockerFamily(image string) string {
	img := strings.ToLower(image)
	name, tag, _ := strings.Cut(path.Base(img), ":")
	switch {
	case strings.Contains(img, "$"):
		return ""
	case strings.Contains(name, "alpine") || strings.Contains(tag, "alpine"):
		return "alpine"
	case strings.Contains(name, "ubuntu") || strings.Contains(tag, "jammy") || strings.Contains(tag, "noble") || strings.Contains(tag, "focal"):
		return "ubuntu"
	case strings.Contains(name, "fedora"):
		return "fedora"
	case strings.HasPrefix(name, "ubi") || strings.Contains(img, "redhat") || strings.Contains(name, "rhel") ||
		strings.Contains(name, "centos") || strings.Contains(name, "rockylinux") || strings.Contains(name, "almalinux"):
		return "rhel"
	case name == "scratch":
		return ""
	}
	// Debian is the base of the official language images (python, node, golang, ruby).
	return "debian"
}

func parseDockerfile(d *deriver, file string, data []byte) {
	family := ""
	// Join continuation lines, remembering where each logical line starts.
	var logical strings.Builder
	start := 0
	flush := func() {
		line := logical.String()
		logical.Reset()
		if m := fromRE.FindStringSubmatch(line); m != nil {
			family = dockerFamily(m[1])
			return
		}
		switch {
		case aptRE.MatchString(line):
			f := family
			if f != "ubuntu" {
				f = "debian"
			}
			d.selectPreset(f, file)
		case apkRE.MatchString(line):
			d.selectPreset("alpine", file)
		case dnfRE.MatchString(line):
			f := family
			if f != "rhel" {
				f = "fedora"
			}
			d.selectPreset(f, file)
		}
		d.suggestScriptURLs(file, start, line)
		for _, m := range npmRegSetR.FindAllStringSubmatch(line, -1) {
			d.suggest(file, start, m[1], "npm config set registry")
		}
	}
	forLines(data, func(n int, line string) {
		if logical.Len() == 0 {
			start = n
		}
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			return
		}
		if t, ok := strings.CutSuffix(strings.TrimRight(line, " \t"), "\\"); ok {
			logical.WriteString(t + " ")
			return
		}
		logical.WriteString(line)
		flush()
	})
	if logical.Len() > 0 {
		flush()
	}
}
