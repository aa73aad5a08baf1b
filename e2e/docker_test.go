package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-egress/sluice/internal/testnet"
)

// The egress network is a /26 of TEST-NET-2 or -3, which the guard does not
// deny; the first free one is taken, so that runs side by side do not
// collide. The sandbox network is internal, on whatever subnet Docker picks
// (a private range, as in real use).
var dockerEgressSubnets = []string{
	"198.51.100.0/26", "198.51.100.64/26", "198.51.100.128/26", "198.51.100.192/26",
	"203.0.113.0/26", "203.0.113.64/26", "203.0.113.128/26", "203.0.113.192/26",
}

// dockerSandboxSubnets are tried in turn for the internal sandbox network, on which the
// gateway has a fixed address (.53): the agent's only resolver.
var dockerSandboxSubnets = []string{"172.31.53.0/24", "10.253.53.0/24", "192.168.253.0/24"}

// dockerPolicy: %[1]s is the upstream's address, %[2]s the egress bridge's, %[3]s the
// gateway's address on the sandbox network, %[4]s that network.
const dockerPolicy = `
version: 1
listen:
  proxy: 0.0.0.0:3128
  dns: 0.0.0.0:53
dns:
  addrs: [%[3]s]
  sources: [{cidr: %[4]s, tenant: acme}]
data_dir: /data
upstream:
  extra_roots: [/etc/sluice/upstream-ca.pem]
  hosts:
    api.example.test: %[1]s
    other.example.test: %[1]s
    bridge.example.test: %[2]s
    metadata.example.test: 169.254.169.254
tenants:
  acme:
    token_file: /etc/sluice/acme.token
    classes:
      agent:
        allow:
          - host: api.example.test
          # Allowed by the policy, refused by the guarded dialer:
          - host: bridge.example.test
          - host: metadata.example.test
`

// TestDocker builds the images in deploy/, runs the gateway between an
// internal sandbox network and an egress network with a TLS upstream, and
// shows from inside an agent container what gets out and what does not.
// It removes every container, network, volume and image it made, except the
// cached Debian tools image (sluice-test-tools:*) and its tarball.
func TestDocker(t *testing.T) {
	if testing.Short() {
		requireDocker(t, "skipped in -short mode")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		requireDocker(t, "no docker CLI")
	}
	if _, err := dockerCmd(context.Background(), 20*time.Second, "info", "--format", "{{.ServerVersion}}"); err != nil {
		requireDocker(t, "no Docker engine: "+strings.SplitN(err.Error(), "\n", 2)[0])
	}
	begin := time.Now()
	d := newDocker(t)
	tools := toolsImage(t)

	// Images: the gateway from scratch with the static binary, the upstream
	// from scratch, the example agent from deploy/compose/agent on the tools base.
	gwCtx := t.TempDir()
	buildStatic(t, "..", "./cmd/sluice", filepath.Join(gwCtx, "sluice"))
	roots, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		t.Fatalf("the gateway image needs the host's root bundle: %v", err)
	}
	mustWrite(t, filepath.Join(gwCtx, "ca-certificates.crt"), string(roots), 0o644)
	copyTree(t, "../deploy/image/rootfs", filepath.Join(gwCtx, "rootfs"))
	gwImage := d.build("gateway", "../deploy/image/Dockerfile.prebuilt", gwCtx)
	agentImage := d.build("agent", "", "../deploy/compose/agent", "BASE="+tools, "SLUICE_IMAGE="+gwImage)
	upCA := testnet.NewTestCA(t, "upstream")
	certDir := t.TempDir()
	os.Chmod(certDir, 0o755)
	upImage := upstreamImage(t, d, upCA, certDir, "api.example.test", "other.example.test", "bridge.example.test", "metadata.example.test")

	t.Run("gateway image runs as non-root with a health check", func(t *testing.T) {
		out := d.run(time.Minute, "image", "inspect", "--format", "{{.Config.User}}|{{json .Config.Volumes}}|{{json .Config.Healthcheck.Test}}", gwImage)
		parts := strings.Split(out, "|")
		if parts[0] != "65532:65532" || !strings.Contains(parts[1], `"/data"`) || !strings.Contains(parts[2], "healthcheck") {
			t.Fatalf("image config: %s", out)
		}
	})

	// Networks, and the data volume (removed after the containers).
	egress, sandbox := d.prefix+"-egress", d.prefix+"-sandbox"
	var dockerUpstreamIP, dockerBridgeEgress string
	for _, subnet := range dockerEgressSubnets {
		base := netip.MustParsePrefix(subnet).Addr()
		bridge := base.Next()
		_, err := dockerCmd(context.Background(), time.Minute, "network", "create", "--label", d.label, "--subnet", subnet, "--gateway", bridge.String(), egress)
		if err == nil {
			dockerBridgeEgress = bridge.String()
			up := base.As4()
			up[3] += 10
			dockerUpstreamIP = netip.AddrFrom4(up).String()
			break
		}
		if !strings.Contains(err.Error(), "overlap") {
			t.Fatal(err)
		}
	}
	if dockerUpstreamIP == "" {
		t.Fatalf("no free egress subnet among %v", dockerEgressSubnets)
	}
	d.cleanup("network", "rm", egress)
	var sandboxSubnet, gwSandboxIP string
	for _, subnet := range dockerSandboxSubnets {
		_, err := dockerCmd(context.Background(), time.Minute, "network", "create", "--label", d.label, "--internal", "--subnet", subnet, sandbox)
		if err == nil {
			a := netip.MustParsePrefix(subnet).Addr().As4()
			a[3] = 53
			sandboxSubnet, gwSandboxIP = subnet, netip.AddrFrom4(a).String()
			break
		}
		if !strings.Contains(err.Error(), "overlap") {
			t.Fatal(err)
		}
	}
	if sandboxSubnet == "" {
		t.Fatalf("no free sandbox subnet among %v", dockerSandboxSubnets)
	}
	d.cleanup("network", "rm", sandbox)
	dataVol := d.prefix + "-data"
	d.run(time.Minute, "volume", "create", "--label", d.label, dataVol)
	d.cleanup("volume", "rm", "-f", dataVol)
	// Containers are removed before the networks (cleanups run in reverse).
	var containers []string
	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range containers {
				if out, err := dockerCmd(context.Background(), 30*time.Second, "logs", "--tail", "40", c); err == nil {
					t.Logf("logs of %s:\n%s", c, out)
				}
			}
		}
		if len(containers) > 0 {
			dockerCmd(context.Background(), 2*time.Minute, append([]string{"rm", "-f", "-v"}, containers...)...)
		}
	})

	// The upstream on the egress network.
	upName := d.prefix + "-upstream"
	containers = append(containers, upName)
	d.run(time.Minute, "run", "-d", "--label", d.label, "--name", upName, "--network", egress, "--ip", dockerUpstreamIP,
		"-v", certDir+":/certs:ro", upImage)

	// The gateway's config, token and upstream CA; its data volume.
	cfgDir := t.TempDir()
	os.Chmod(cfgDir, 0o755)
	token := randomToken(t)
	mustWrite(t, filepath.Join(cfgDir, "sluice.yaml"), fmt.Sprintf(dockerPolicy, dockerUpstreamIP, dockerBridgeEgress, gwSandboxIP, sandboxSubnet), 0o644)
	mustWrite(t, filepath.Join(cfgDir, "acme.token"), token+"\n", 0o600)
	os.Chown(filepath.Join(cfgDir, "acme.token"), 65532, 65532)
	mustWrite(t, filepath.Join(cfgDir, "upstream-ca.pem"), string(upCA.CertPEM), 0o644)

	// `sluice ca export` as compose runs it: proxy as the agent reaches it,
	// paths where the agent mounts the files.
	trustDir := t.TempDir()
	os.Chmod(trustDir, 0o755)
	if err := os.Chown(trustDir, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	d.run(time.Minute, "run", "--rm", "--label", d.label, "--network", "none",
		"-v", dataVol+":/data", "-v", cfgDir+":/etc/sluice:ro", "-v", trustDir+":/export", gwImage,
		"ca", "export", "--config", "/etc/sluice/sluice.yaml", "--data-dir", "/data", "--tenant", "acme",
		"--out", "/export", "--proxy", "gateway:3128", "--container-dir", "/etc/sluice/trust")

	// The gateway: on the sandbox network (as "gateway") and the egress one.
	gwName := d.prefix + "-gateway"
	containers = append(containers, gwName)
	d.run(time.Minute, "create", "--label", d.label, "--name", gwName, "--network", sandbox, "--ip", gwSandboxIP, "--network-alias", "gateway",
		"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges:true", "--health-interval", "1s",
		"-v", dataVol+":/data", "-v", cfgDir+":/etc/sluice:ro", gwImage)
	d.run(time.Minute, "network", "connect", egress, gwName)
	d.run(time.Minute, "start", gwName)
	waitHealthy(t, gwName, 60*time.Second)

	// The agent: sandbox network only, the tenant CA mounted where the
	// Debian trust store reads it, the export mounted read-only.
	agentName := d.prefix + "-agent"
	containers = append(containers, agentName)
	d.run(time.Minute, "run", "-d", "--label", d.label, "--name", agentName, "--network", sandbox,
		"--dns", gwSandboxIP, "--dns-search", ".", // Sluice is its only resolver
		"-v", trustDir+":/etc/sluice/trust:ro",
		"-v", filepath.Join(trustDir, "ca.pem")+":/usr/local/share/ca-certificates/sluice-tenant.crt:ro",
		agentImage)
	progress("gateway and agent up after %s", time.Since(begin).Round(time.Second))

	a := &agent{t: t, name: agentName}
	if out, code := a.exec(nil, "with-sluice", "true"); code != 0 {
		t.Fatalf("agent entrypoint: %d %s", code, out)
	}

	t.Run("the allowed upstream works through the gateway", func(t *testing.T) {
		r := a.curl(t, nil, "https://api.example.test/v1/hi")
		if r.code != "200" || r.body != "hello from upstream api.example.test /v1/hi" {
			t.Fatalf("curl: %+v", r)
		}
	})

	t.Run("the system store trusts the tenant CA (update-ca-certificates)", func(t *testing.T) {
		// Without the bundle variables, curl reads the system store only.
		unset := []string{"-u", "SSL_CERT_FILE", "-u", "CURL_CA_BUNDLE"}
		r := a.curl(t, unset, "https://api.example.test/v1/sys")
		if r.code != "200" {
			t.Fatalf("curl with the system store: %+v", r)
		}
		// And the check can fail: a store without the tenant CA refuses
		// (curl exit 60: peer certificate cannot be authenticated).
		other := "/usr/share/ca-certificates/mozilla/ISRG_Root_X1.crt"
		if _, code := a.exec(nil, "test", "-r", other); code != 0 {
			t.Fatalf("%s missing in the tools image", other)
		}
		r = a.curl(t, unset, "--capath", "/nonexistent", "--cacert", other, "https://api.example.test/v1/sys")
		if r.exit != 60 {
			t.Fatalf("curl with a store without the tenant CA: %+v, want exit 60", r)
		}
	})

	t.Run("everything else is refused by the gateway", func(t *testing.T) {
		bridge := a.sandboxBridge(t)
		tests := []struct{ name, url, want string }{
			{"other host", "https://other.example.test/", "host-not-allowed"},
			{"unknown host", "https://evil.example.test/", "host-not-allowed"},
			{"host loopback", "https://127.0.0.1/", "host-not-allowed"},
			{"sandbox bridge gateway", "https://" + bridge + "/", "host-not-allowed"},
			{"metadata", "http://169.254.169.254/latest/meta-data/", "host-not-allowed"},
			{"metadata by an allowed name", "https://metadata.example.test/", "address-not-allowed"},
			{"egress bridge by an allowed name", "https://bridge.example.test/", "address-not-allowed"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				r := a.curl(t, nil, tc.url)
				if r.reason != tc.want || (r.code != "403" && r.connect != "403") {
					t.Fatalf("%s: %+v, want 403 %s", tc.url, r, tc.want)
				}
			})
		}
	})

	t.Run("no direct way out of the sandbox", func(t *testing.T) {
		for _, u := range []string{"https://" + dockerUpstreamIP + "/", "http://" + dockerBridgeEgress + "/", "https://" + a.sandboxBridge(t) + "/"} {
			r := a.curl(t, nil, "--noproxy", "*", "--max-time", "3", "-k", u)
			if r.exit == 0 {
				t.Errorf("%s reached directly: %+v", u, r)
			}
		}
	})

	t.Run("the agent resolves through Sluice only", func(t *testing.T) {
		if out, code := a.exec(nil, "getent", "hosts", "sluice.internal"); code != 0 || !strings.HasPrefix(out, gwSandboxIP) {
			t.Errorf("sluice.internal: exit %d %q, want %s", code, out, gwSandboxIP)
		}
		// Allowed for the proxy, and still no answer: names are the gateway's to resolve.
		for _, name := range []string{"api.example.test", "example.com"} {
			if out, code := a.exec(nil, "getent", "hosts", name); code == 0 {
				t.Errorf("%s resolved in the agent: %q", name, out)
			}
		}
	})

	doctor := []string{"with-sluice", "sluice", "doctor", "--control", "https://api.example.test/v1/", "--direct", dockerUpstreamIP + ":443", "--timeout", "4s"}
	t.Run("sluice doctor passes in the sandbox", func(t *testing.T) {
		out, code := a.exec(nil, doctor...)
		if code != 0 || strings.Contains(out, "FAIL") || strings.Contains(out, "INCONCLUSIVE") {
			t.Fatalf("doctor exit %d:\n%s", code, out)
		}
		for _, want := range []string{"PASS  allowed api.example.test", "PASS  tenant CA trusted", "PASS  refused: metadata", "PASS  refused: bridge gateway",
			"PASS  no direct route " + dockerUpstreamIP + ":443", "PASS  resolver is Sluice", "PASS  no answer for a denied name"} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in\n%s", want, out)
			}
		}
		t.Logf("doctor in the sandbox:\n%s", out)
	})

	t.Run("sluice doctor fails with a direct way out", func(t *testing.T) {
		d.run(time.Minute, "network", "connect", egress, agentName)
		defer d.run(time.Minute, "network", "disconnect", egress, agentName)
		out, code := a.exec(nil, doctor...)
		if code == 0 || !strings.Contains(out, "FAIL  no direct route "+dockerUpstreamIP+":443") {
			t.Fatalf("doctor on a network with a way out: exit %d\n%s", code, out)
		}
	})

	t.Run("the token stays out of the gateway log", func(t *testing.T) {
		out, err := dockerCmd(context.Background(), 30*time.Second, "logs", gwName)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, token) {
			t.Fatal("the proxy token is in the gateway's log")
		}
	})

	t.Run("with the gateway stopped there is no egress at all", func(t *testing.T) {
		d.run(time.Minute, "stop", "-t", "10", gwName)
		for _, tc := range []struct {
			env  []string
			args []string
		}{
			{nil, []string{"--max-time", "5", "https://api.example.test/v1/"}},
			{nil, []string{"--noproxy", "*", "--max-time", "3", "-k", "https://" + dockerUpstreamIP + "/"}},
			{nil, []string{"--noproxy", "*", "--max-time", "3", "http://" + dockerBridgeEgress + "/"}},
		} {
			if r := a.curl(t, tc.env, tc.args...); r.exit == 0 {
				t.Errorf("curl %v got out: %+v", tc.args, r)
			}
		}
	})
	t.Run("compose: docker compose up gives a gateway and a fenced agent", func(t *testing.T) {
		testCompose(t, d, gwImage, agentImage)
	})
	progress("done in %s", time.Since(begin).Round(time.Second))
}

// composeCLI is `docker compose` (v2) or `docker-compose` (v1), whichever exists.
func composeCLI(t *testing.T) []string {
	if _, err := dockerCmd(context.Background(), 20*time.Second, "compose", "version"); err == nil {
		return []string{"docker", "compose"}
	}
	if p, err := exec.LookPath("docker-compose"); err == nil {
		return []string{p}
	}
	requireDocker(t, "neither `docker compose` nor `docker-compose` is installed")
	return nil
}

// testCompose runs deploy/compose as it is, with the images this test built
// (no registry here) and checks the topology it promises. The demo policy
// allows example.com, which a test machine may not reach: the checks are the
// refusals and the fence, not the control host.
func testCompose(t *testing.T, d *docker, gwImage, agentImage string) {
	cli := composeCLI(t)
	project := d.prefix + "-compose"
	compose := func(timeout time.Duration, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		full := append(append([]string{}, cli[1:]...), append([]string{"-p", project, "-f", "../deploy/compose/docker-compose.yml"}, args...)...)
		cmd := exec.CommandContext(ctx, cli[0], full...)
		cmd.Env = append(os.Environ(), "SLUICE_IMAGE="+gwImage, "SLUICE_AGENT_IMAGE="+agentImage, "DOCKER_BUILDKIT=0")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := compose(time.Minute, "logs", "--no-color", "--tail", "40")
			t.Logf("compose logs:\n%s", out)
		}
		if out, err := compose(2*time.Minute, "down", "-v", "--remove-orphans"); err != nil {
			t.Logf("compose down: %v\n%s", err, out)
		}
	})
	start := time.Now()
	if out, err := compose(3*time.Minute, "up", "-d", "--no-build"); err != nil {
		t.Fatalf("compose up: %v\n%s", err, out)
	}
	progress("compose up in %s", time.Since(start).Round(time.Second))
	agentID, err := compose(time.Minute, "ps", "-q", "agent")
	agentID = strings.TrimSpace(agentID)
	if err != nil || agentID == "" {
		t.Fatalf("no agent container: %v %s", err, agentID)
	}
	nets, err := dockerCmd(context.Background(), 30*time.Second, "inspect", "--format", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}", agentID)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(nets); len(got) != 1 || !strings.HasSuffix(got[0], "_sandbox") {
		t.Fatalf("agent networks %v: want the sandbox only", got)
	}
	internal, err := dockerCmd(context.Background(), 30*time.Second, "network", "inspect", "--format", "{{.Internal}}", strings.Fields(nets)[0])
	if err != nil || internal != "true" {
		t.Fatalf("sandbox network internal=%q %v", internal, err)
	}
	a := &agent{t: t, name: agentID}
	// The entrypoint loaded sluice.env from the export: the proxy is the gateway.
	if out, code := a.exec(nil, "with-sluice", "sh", "-c", `case "$HTTPS_PROXY" in http://demo:*@gateway:3128) echo ok;; *) echo "HTTPS_PROXY not the gateway";; esac`); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Fatalf("agent env: %d %s", code, out)
	}
	if r := a.curl(t, nil, "https://evil.example.test/"); r.reason != "host-not-allowed" {
		t.Fatalf("compose agent to a denied host: %+v", r)
	}
	if r := a.curl(t, nil, "http://169.254.169.254/latest/meta-data/"); r.reason != "host-not-allowed" {
		t.Fatalf("compose agent to the metadata address: %+v", r)
	}
	if r := a.curl(t, nil, "--noproxy", "*", "--max-time", "3", "-k", "https://"+a.sandboxBridge(t)+"/"); r.exit == 0 {
		t.Fatalf("compose agent reached its bridge directly: %+v", r)
	}
	// The doctor ran at start: its refusals and fence passed (the control
	// host, example.com, needs the internet and is not judged here).
	var logs string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		if logs, _ = dockerCmd(context.Background(), 30*time.Second, "logs", agentID); strings.Contains(logs, "doctor: ") {
			break
		}
	}
	for _, want := range []string{"PASS  refused: denied host", "PASS  refused: metadata 169.254.169.254:443", "PASS  refused: bridge gateway"} {
		if !strings.Contains(logs, want) {
			t.Errorf("agent's doctor report lacks %q:\n%s", want, logs)
		}
	}
}

// waitHealthy waits for the image's own HEALTHCHECK (sluice healthcheck) to pass.
func waitHealthy(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out, err := dockerCmd(context.Background(), 20*time.Second, "inspect", "--format", "{{.State.Status}} {{.State.Health.Status}}", name)
		if err == nil && out == "running healthy" {
			return
		}
		if time.Now().After(deadline) || strings.HasPrefix(out, "exited") {
			logs, _ := dockerCmd(context.Background(), 20*time.Second, "logs", name)
			health, _ := dockerCmd(context.Background(), 20*time.Second, "inspect", "--format", "{{json .State.Health}}", name)
			t.Fatalf("%s not healthy: %q %v\nhealth: %s\nlogs:\n%s", name, out, err, health, logs)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// agent runs commands in the agent container.
type agent struct {
	t      *testing.T
	name   string
	bridge string
}

// exec runs a command in the agent; unset are env variables to remove (env -u).
func (a *agent) exec(unset []string, args ...string) (string, int) {
	full := []string{"exec", a.name}
	if len(unset) > 0 {
		// with-sluice loads sluice.env; env -u then takes variables out.
		full = append(full, "with-sluice", "env")
		full = append(full, unset...)
		args = args[1:]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", append(full, args...)...)
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	return string(out), code
}

type curlResult struct {
	exit                  int
	code, connect, reason string
	body                  string
}

// curl runs curl in the agent through with-sluice (the proxy and trust from
// sluice.env) and returns what it saw.
func (a *agent) curl(t *testing.T, unset []string, args ...string) curlResult {
	t.Helper()
	script := `out=$(mktemp); err=$(mktemp); curl -sS -v --max-time 15 -o "$out" -w '%{http_code} %{http_connect}' "$@" 2>"$err"; rc=$?; echo; echo "exit=$rc"; grep -i '^< sluice-reason:' "$err" | tail -1; echo "body=$(cat "$out")"; [ $rc = 0 ] || tail -3 "$err"`
	full := append([]string{"with-sluice", "sh", "-c", script, "curl"}, args...)
	out, _ := a.exec(unset, full...)
	var r curlResult
	r.exit = -1
	lines := strings.Split(out, "\n")
	if len(lines) > 0 {
		fmt.Sscan(lines[0], &r.code, &r.connect)
	}
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "exit="):
			fmt.Sscan(strings.TrimPrefix(l, "exit="), &r.exit)
		case strings.HasPrefix(strings.ToLower(l), "< sluice-reason:"):
			r.reason = strings.TrimSpace(l[len("< sluice-reason:"):])
		case strings.HasPrefix(l, "body="):
			r.body = strings.TrimPrefix(l, "body=")
		}
	}
	return r
}

// sandboxBridge is the internal network's bridge address (the first host
// of the agent's subnet), where the Docker host itself answers.
func (a *agent) sandboxBridge(t *testing.T) string {
	t.Helper()
	if a.bridge != "" {
		return a.bridge
	}
	out, err := dockerCmd(context.Background(), 30*time.Second, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.Gateway}} {{.IPAddress}}/{{.IPPrefixLen}}{{end}}", a.name)
	if err != nil {
		t.Fatal(err)
	}
	gw, _, _ := strings.Cut(out, " ")
	if gw == "" {
		// An internal network has no gateway in the container's view: ask the network.
		net, err := dockerCmd(context.Background(), 30*time.Second, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.NetworkID}}{{end}}", a.name)
		if err != nil {
			t.Fatal(err)
		}
		gw, err = dockerCmd(context.Background(), 30*time.Second, "network", "inspect", "--format", "{{range .IPAM.Config}}{{.Gateway}}{{end}}", net)
		if err != nil || gw == "" {
			t.Fatalf("sandbox bridge address: %q %v", gw, err)
		}
	}
	a.bridge = gw
	return gw
}
