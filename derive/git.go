package derive

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/sluice-egress/sluice/rules"
)

// gitHosts maps the git hosts Sluice knows to their presets and the number of path
// segments a repository has there (0: at least two, as GitLab's subgroups).
var gitHosts = map[string]struct {
	preset   string
	segments int
}{
	"github.com":    {"github", 2},
	"gitlab.com":    {"gitlab", 0},
	"bitbucket.org": {"bitbucket", 2},
}

var repoSegRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$`)

// ParseRemote parses a git remote URL (https://host/owner/repo.git,
// git@host:owner/repo.git, ssh://git@host/owner/repo) on a known git host. Credentials
// in the URL are ignored, never returned.
func ParseRemote(remote string) (rules.GitRepo, error) {
	host, p, err := splitRemote(remote)
	if err != nil {
		return rules.GitRepo{}, err
	}
	gh, ok := gitHosts[host]
	if !ok {
		return rules.GitRepo{}, fmt.Errorf("derive: remote: %q is not a known git host (known: %s)", host, strings.Join(slices.Sorted(maps.Keys(gitHosts)), ", "))
	}
	p = strings.TrimSuffix(strings.Trim(p, "/"), ".git")
	segs := strings.Split(p, "/")
	if (gh.segments > 0 && len(segs) != gh.segments) || len(segs) < 2 || len(segs) > 20 {
		return rules.GitRepo{}, fmt.Errorf("derive: remote: %q is no repository path on %s", p, host)
	}
	for _, s := range segs {
		if !repoSegRE.MatchString(s) || s == "." || s == ".." || strings.HasSuffix(s, ".git") && s != segs[len(segs)-1] {
			return rules.GitRepo{}, fmt.Errorf("derive: remote: bad repository path segment %q", s)
		}
	}
	return rules.GitRepo{Host: host, Path: p, Preset: gh.preset}, nil
}

// splitRemote returns a remote's normalised host and path.
func splitRemote(remote string) (host, p string, err error) {
	remote = strings.TrimSpace(remote)
	if remote == "" {
		return "", "", errors.New("derive: remote: empty")
	}
	if !strings.Contains(remote, "://") {
		// scp-like syntax: [user@]host:path
		at := strings.LastIndex(remote, "@")
		rest := remote[at+1:]
		h, pp, ok := strings.Cut(rest, ":")
		if !ok || h == "" {
			return "", "", errors.New("derive: remote: want a URL or user@host:path")
		}
		n, err := rules.NormalizeHost(h)
		if err != nil {
			return "", "", fmt.Errorf("derive: remote: %w", err)
		}
		return n, pp, nil
	}
	u, err := url.Parse(remote)
	if err != nil {
		return "", "", errors.New("derive: remote: not a URL")
	}
	switch u.Scheme {
	case "https", "http", "ssh", "git":
	default:
		return "", "", fmt.Errorf("derive: remote: unsupported scheme %q", u.Scheme)
	}
	n, err := rules.NormalizeHost(u.Hostname())
	if err != nil {
		return "", "", fmt.Errorf("derive: remote: %w", err)
	}
	return n, u.Path, nil
}

// suggestGit suggests the host of a git URL in any of its spellings (git+ssh, scp-like).
func (d *deriver) suggestGit(file string, line int, spec, why string) {
	spec, _, _ = strings.Cut(spec, "#")
	if host, _, err := splitRemote(strings.TrimPrefix(strings.TrimPrefix(spec, "git+"), "git:")); err == nil &&
		!strings.HasPrefix(spec, "http") && !strings.HasPrefix(spec, "git+http") {
		d.suggest(file, line, "https://"+host+"/", why+" (over ssh: the gateway carries https only)")
		return
	}
	d.suggest(file, line, spec, why)
}
