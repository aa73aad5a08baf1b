package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluice-egress/sluice/config"
	"github.com/sluice-egress/sluice/derive"
	"github.com/sluice-egress/sluice/internal/apiclient"
	"github.com/sluice-egress/sluice/rules"
)

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
	admin := fs.String("admin", "", "admin listener URL (default $"+apiclient.EnvAdmin+" or http://"+config.DefaultAdminAddr+")")
	tenant := fs.String("tenant", "", "tenant of the run (a tenant token's own by default)")
	class := fs.String("class", rules.DefaultClass, "launch class")
	ttl := fs.Duration("ttl", time.Hour, "how long the run may live")
	repo := fs.String("repo", "", "repository directory whose manifests derive the run's presets")
	remote := fs.String("remote", "", "the repository's git remote URL")
	out := fs.String("out", "", "directory to write ca.pem, bundle.pem and run.env (0600) into")
	containerDir := fs.String("container-dir", "", "where the container mounts --out (default "+apiclient.TrustDir+"): the env lines name the files there")
	asJSON := fs.Bool("json", false, "print the API's whole answer as JSON (it holds the run token)")
	sandboxAddr := fs.String("sandbox-addr", "", "the sandbox's IP address, for the resolver and the transparent listeners")
	sandboxNet := fs.String("sandbox-network", "", "the sandbox's network, instead of --sandbox-addr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c, err := apiclient.FromEnv(*admin, "http://"+config.DefaultAdminAddr, *tenant, getenv)
	if err != nil {
		return err
	}
	body := map[string]any{"tenant": *tenant, "class": *class, "ttl": ttl.String(), "repo_remote": *remote,
		"sandbox_addr": *sandboxAddr, "sandbox_network": *sandboxNet}
	if *repo != "" {
		m, err := derive.ReadManifests(*repo)
		if err != nil {
			return fmt.Errorf("--repo: %w", err)
		}
		body["manifests"] = m
	}
	rc, raw, err := c.CreateRun(ctx, body)
	if err != nil {
		return err
	}
	rc.InContainerDir(*containerDir)
	if *out != "" {
		if err := rc.WriteFiles(*out); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	for _, w := range rc.PresetWarnings() {
		fmt.Fprintln(stderr, "warning: "+w)
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
	admin := fs.String("admin", "", "admin listener URL (default $"+apiclient.EnvAdmin+")")
	tenant := fs.String("tenant", "", "tenant of the token in $"+apiclient.EnvToken)
	// The id may come before or after the flags.
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, pos[1])
	}
	id := strings.Join(pos, "")
	if id == "" {
		return fmt.Errorf("%w: sluice run end RUN_ID", errUsage)
	}
	c, err := apiclient.FromEnv(*admin, "http://"+config.DefaultAdminAddr, *tenant, getenv)
	if err != nil {
		return err
	}
	if err := c.EndRun(ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "run %s ended\n", id)
	return nil
}
