package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/sluice-egress/sluice/internal/apiclient"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = ""

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

const usage = `sluice — an egress gateway for sandboxed agents and CI jobs

Usage:
  sluice serve [--config FILE] [--data-dir DIR] [--proxy ADDR] [--admin ADDR] [--drain-timeout 30s]
  sluice ca export --tenant T --out DIR [--config FILE] [--proxy HOST:PORT] [--container-dir DIR]
  sluice config check [--config FILE]
  sluice policy explain --tenant T [--class C] [--repo DIR] [--remote URL] [--run R] [--config FILE] [--json]
  sluice policy check --tenant T [--class C] [--repo DIR] [--run R] URL [--method M] [--config FILE] [--json]
      (check exits 1 when the policy refuses the request)
  sluice policy presets [--json]
  sluice policy propose --tenant T [--class C] [--since 7d] [--config FILE] [--data-dir DIR]
  sluice doctor [--proxy URL] --control URL [--denied HOST] [--direct HOST:PORT]...
  sluice healthcheck [--proxy ADDR] [--admin ADDR] [--ready]
  sluice scan [PATH|-]... [--json] [--config FILE] [--tenant T] [--class C]
  sluice canary issue --tenant T [--run R] [--config FILE] [--json]
  sluice rules test --corpus DIR [--config FILE]
  sluice run create [--tenant T] [--class C] [--ttl 1h] [--repo DIR] [--remote URL] [--admin URL] [--out DIR] [--container-dir DIR] [--json]
  sluice run end RUN_ID [--tenant T] [--admin URL]
      (credentials from SLUICE_TOKEN, or SLUICE_USER and SLUICE_PASSWORD; never argv)
  sluice user hash [--bcrypt] < password
  sluice token new --tenant T [--out FILE] [--force]
  sluice version

Without --config, sluice runs on its embedded default: data in ./sluice-data,
proxy on 127.0.0.1:3128, one tenant "default" that may reach nothing.
`

// errUsage marks a command line that could not be understood (exit 2).
var errUsage = errors.New("usage")

// errRefused: the command answered "no" (policy check on a URL the policy
// denies) and said so on stdout; the exit code is 1, with nothing more on stderr.
var errRefused = errors.New("refused")

// Run runs one sluice command and returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errRefused):
		return 1
	case errors.Is(err, errUsage), errors.Is(err, apiclient.ErrUsage):
		fmt.Fprintf(stderr, "sluice: %v\n\n%s", err, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "sluice: %v\n", err)
		return 1
	}
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		args = []string{"serve"}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, stdout, stderr)
	case "ca":
		if len(rest) == 0 || rest[0] != "export" {
			return fmt.Errorf("%w: sluice ca export --tenant T --out DIR", errUsage)
		}
		return runCAExport(rest[1:], stdout, stderr)
	case "config":
		if len(rest) == 0 || rest[0] != "check" {
			return fmt.Errorf("%w: sluice config check --config FILE", errUsage)
		}
		return runConfigCheck(rest[1:], stdout, stderr)
	case "doctor":
		return runDoctor(ctx, rest, os.Getenv, stdout, stderr)
	case "healthcheck":
		return runHealthcheck(ctx, rest, stdout, stderr)
	case "policy":
		return runPolicy(rest, stdout, stderr)
	case "scan":
		return runScan(ctx, rest, os.Stdin, stdout, stderr)
	case "canary":
		if len(rest) == 0 || rest[0] != "issue" {
			return fmt.Errorf("%w: sluice canary issue --tenant T [--run R]", errUsage)
		}
		return runCanaryIssue(rest[1:], stdout, stderr)
	case "rules":
		if len(rest) == 0 || rest[0] != "test" {
			return fmt.Errorf("%w: sluice rules test --corpus DIR", errUsage)
		}
		return runRulesTest(ctx, rest[1:], stdout, stderr)
	case "user":
		if len(rest) == 0 || rest[0] != "hash" {
			return fmt.Errorf("%w: sluice user hash [--bcrypt] < password", errUsage)
		}
		return runUserHash(rest[1:], os.Stdin, stdout, stderr)
	case "run":
		return runRun(ctx, rest, os.Getenv, stdout, stderr)
	case "token":
		if len(rest) == 0 || rest[0] != "new" {
			return fmt.Errorf("%w: sluice token new --tenant T [--out FILE]", errUsage)
		}
		return runTokenNew(rest[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "sluice", versionString())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		return fmt.Errorf("%w: unknown command %q (want one of serve, ca, config, policy, doctor, healthcheck, version)", errUsage, strings.TrimSpace(cmd))
	}
}

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("sluice "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}

// parseInterspersed parses flags found anywhere among args and returns the
// other arguments, in order.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
}
