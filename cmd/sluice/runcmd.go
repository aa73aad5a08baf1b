package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/derive"
	"github.com/sluice-egress/sluice/internal/apiclient"
	"github.com/sluice-egress/sluice/internal/fileutil"
	"github.com/sluice-egress/sluice/rules"
)

// Environment variables of the API client commands. Credentials come from the
// environment, never from argv (which every user of the host can read).
const (
	envAdmin    = "SLUICE_ADMIN"    // the admin listener's URL
	envToken    = "SLUICE_TOKEN"    // a tenant token ("token" with --tenant, or "tenant:token")
	envUser     = "SLUICE_USER"     // a dashboard user, with SLUICE_PASSWORD
	envPassword = "SLUICE_PASSWORD" // a variable name, not a secret
)

// Bounds of the manifests `run create --repo` sends.
const (
	maxSendManifest = 2 << 20
	maxSendTotal    = 3 << 20
	maxSendDepth    = 8
)

// newAPIClient is the API client for --admin and the credentials in the env.
func newAPIClient(admin, tenant string, getenv func(string) string) (*apiclient.Client, error) {
	if admin == "" {
		admin = getenv(envAdmin)
	}
	if admin == "" {
		admin = "http://" + config.DefaultAdminAddr
	}
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: --admin: want the admin listener's URL, such as http://127.0.0.1:8080", errUsage)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: --admin: no credentials in the URL; set %s or %s/%s", errUsage, envToken, envUser, envPassword)
	}
	c := &apiclient.Client{Base: u}
	tok, user := getenv(envToken), getenv(envUser)
	switch {
	case tok != "":
		cred := tok
		if !strings.Contains(tok, ":") {
			if tenant == "" {
				return nil, fmt.Errorf("%w: %s holds a tenant token: name its tenant with --tenant", errUsage, envToken)
			}
			cred = tenant + ":" + tok
		}
		c.Auth = func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+cred) }
	case user != "":
		pw := getenv(envPassword)
		c.Auth = func(r *http.Request) { r.SetBasicAuth(user, pw) }
	default:
		return nil, fmt.Errorf("%w: set %s (a tenant token) or %s and %s (a dashboard user)", errUsage, envToken, envUser, envPassword)
	}
	return c, nil
}

// runCreated is the part of POST /api/runs' answer the command uses.
type runCreated struct {
	ID       string    `json:"id"`
	Tenant   string    `json:"tenant"`
	Class    string    `json:"class"`
	Expires  time.Time `json:"expires"`
	Token    string    `json:"token"`
	ProxyURL string    `json:"proxy_url"`
	CAPEM    string    `json:"ca_pem"`
	Env      []string  `json:"env"`
}

func runRun(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: sluice run create|end", errUsage)
	}
	switch args[0] {
	case "create":
		return runCreate(ctx, args[1:], getenv, stdout, stderr)
	case "end":
		return runEnd(ctx, args[1:], getenv, stdout, stderr)
	}
	return fmt.Errorf("%w: sluice run create|end (got %q)", errUsage, args[0])
}

func runCreate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("run create", stderr)
	admin := fs.String("admin", "", "admin listener URL (default $"+envAdmin+" or http://"+config.DefaultAdminAddr+")")
	tenant := fs.String("tenant", "", "tenant of the run (a tenant token's own by default)")
	class := fs.String("class", rules.DefaultClass, "launch class")
	ttl := fs.Duration("ttl", time.Hour, "how long the run may live")
	repo := fs.String("repo", "", "repository directory whose manifests derive the run's presets")
	remote := fs.String("remote", "", "the repository's git remote URL")
	out := fs.String("out", "", "directory to write ca.pem and run.env (0600) into")
	asJSON := fs.Bool("json", false, "print the API's whole answer as JSON (it holds the run token)")
	sandboxAddr := fs.String("sandbox-addr", "", "the sandbox's IP address, for the resolver and the transparent listeners")
	sandboxNet := fs.String("sandbox-network", "", "the sandbox's network, instead of --sandbox-addr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c, err := newAPIClient(*admin, *tenant, getenv)
	if err != nil {
		return err
	}
	body := map[string]any{"tenant": *tenant, "class": *class, "ttl": ttl.String(), "repo_remote": *remote,
		"sandbox_addr": *sandboxAddr, "sandbox_network": *sandboxNet}
	if *repo != "" {
		m, err := readManifests(*repo)
		if err != nil {
			return err
		}
		body["manifests"] = m
	}
	var raw json.RawMessage
	if err := c.Do(ctx, http.MethodPost, "/api/runs", body, &raw); err != nil {
		return err
	}
	var rc runCreated
	if err := json.Unmarshal(raw, &rc); err != nil {
		return fmt.Errorf("admin API: bad answer: %w", err)
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o700); err != nil {
			return err
		}
		if err := fileutil.WriteFile(filepath.Join(*out, "ca.pem"), []byte(rc.CAPEM), 0o644); err != nil {
			return err
		}
		if err := fileutil.WriteFile(filepath.Join(*out, "run.env"), []byte(strings.Join(rc.Env, "\n")+"\n"), 0o600); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "run %s (%s/%s) until %s\n", rc.ID, rc.Tenant, rc.Class, rc.Expires.Format(time.RFC3339))
	if *asJSON {
		_, err := stdout.Write(append(raw, '\n'))
		return err
	}
	// The env lines on stdout, for `sluice run create … > run.env`: they hold the run
	// token, which is what the caller asked for.
	for _, l := range rc.Env {
		fmt.Fprintln(stdout, l)
	}
	return nil
}

func runEnd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("run end", stderr)
	admin := fs.String("admin", "", "admin listener URL (default $"+envAdmin+")")
	tenant := fs.String("tenant", "", "tenant of the token in $"+envToken)
	// The id may come before or after the flags.
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if id == "" && fs.NArg() == 1 {
		id = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if id == "" {
		return fmt.Errorf("%w: sluice run end RUN_ID", errUsage)
	}
	c, err := newAPIClient(*admin, *tenant, getenv)
	if err != nil {
		return err
	}
	if err := c.Do(ctx, http.MethodDelete, "/api/runs/"+url.PathEscape(id), nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "run %s ended\n", id)
	return nil
}

// readManifests returns the manifests Derive reads under dir, by relative path,
// skipping what Derive skips and staying within the API's size limit (smaller files
// first: lock files are the large ones and the least needed).
func readManifests(dir string) (map[string]string, error) {
	type file struct {
		rel  string
		size int64
	}
	var files []file
	root := filepath.Clean(dir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if p != root && (derive.SkipDir(d.Name()) || strings.Count(rel, "/") >= maxSendDepth) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !derive.IsManifest(rel) {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Size() <= maxSendManifest {
			files = append(files, file{rel, info.Size()})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("--repo: %w", err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].size < files[j].size })
	out := map[string]string{}
	var total int64
	for _, f := range files {
		if total+f.size > maxSendTotal || len(out) >= 200 {
			break
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.rel)))
		if err != nil {
			continue
		}
		out[f.rel] = string(b)
		total += int64(len(b))
	}
	return out, nil
}
