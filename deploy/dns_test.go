package deploy_test

import (
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// The sandboxes' resolver in the manifests: the Service's fixed address on port 53, the
// agent pods' only nameserver.

func TestServiceResolver(t *testing.T) {
	m := loadManifests(t)
	s := m.service
	if _, err := netip.ParseAddr(s.Spec.ClusterIP); err != nil {
		t.Fatalf("clusterIP %q: agents' dnsConfig needs a fixed address", s.Spec.ClusterIP)
	}
	ports := map[string]corev1.ContainerPort{}
	for _, p := range m.deployment.Spec.Template.Spec.Containers[0].Ports {
		ports[p.Name] = p
	}
	got := map[corev1.Protocol]bool{}
	for _, p := range s.Spec.Ports {
		if p.Port != 53 {
			continue
		}
		cp, ok := ports[p.TargetPort.StrVal]
		if !ok || cp.Protocol != p.Protocol {
			t.Errorf("DNS port %s/%s targets %v, not a container port of that protocol", p.Name, p.Protocol, p.TargetPort)
		}
		if cp.ContainerPort < 1024 {
			t.Errorf("container port %d: the container has no capability to bind it", cp.ContainerPort)
		}
		got[p.Protocol] = true
	}
	if !got[corev1.ProtocolUDP] || !got[corev1.ProtocolTCP] {
		t.Errorf("the Service must offer DNS on 53 over UDP and TCP: %v", s.Spec.Ports)
	}
}

// checkAgentPod: a pod whose only resolver is Sluice at addr and that is fenced by the
// agents' NetworkPolicy.
func checkAgentPod(p *corev1.Pod, addr string) []string {
	var errs []string
	if p.Labels["sluice.dev/role"] != "agent" {
		errs = append(errs, "no sluice.dev/role: agent label: the agents' NetworkPolicy does not select it")
	}
	if p.Spec.DNSPolicy != corev1.DNSNone {
		errs = append(errs, "dnsPolicy "+string(p.Spec.DNSPolicy)+": the cluster DNS would be a resolver")
	}
	if c := p.Spec.DNSConfig; c == nil || !slices.Equal(c.Nameservers, []string{addr}) || len(c.Searches) != 0 {
		errs = append(errs, "dnsConfig must name Sluice ("+addr+") alone, with no search domains")
	}
	if p.Spec.HostNetwork {
		errs = append(errs, "hostNetwork: the pod would bypass every policy")
	}
	if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
		errs = append(errs, "an agent gets no service account token")
	}
	for _, c := range p.Spec.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) != 0 {
			errs = append(errs, "container "+c.Name+" must drop every capability")
		}
		for _, e := range c.Env {
			if strings.Contains(strings.ToLower(e.Name), "proxy") && e.Value != "" {
				errs = append(errs, "container "+c.Name+" carries a proxy setting inline: it belongs in sluice.env")
			}
		}
	}
	for _, c := range p.Spec.InitContainers {
		if sc := c.SecurityContext; sc != nil && sc.Capabilities != nil {
			for _, a := range sc.Capabilities.Add {
				if a != "NET_ADMIN" && a != "NET_RAW" {
					errs = append(errs, "init container "+c.Name+" adds "+string(a))
				}
			}
		}
	}
	return errs
}

func TestAgentPods(t *testing.T) {
	m := loadManifests(t)
	addr := m.service.Spec.ClusterIP
	for _, path := range []string{"k8s/agent/agent-pod.yaml", "k8s/transparent/agent-pod.yaml"} {
		t.Run(path, func(t *testing.T) {
			p := &corev1.Pod{}
			mustStrict(t, path, p)
			for _, e := range checkAgentPod(p, addr) {
				t.Error(e)
			}
			// An overlay that keeps the cluster DNS fails the check.
			leaky := p.DeepCopy()
			leaky.Spec.DNSPolicy = corev1.DNSClusterFirst
			if len(checkAgentPod(leaky, addr)) == 0 {
				t.Error("a pod on the cluster DNS passed")
			}
			other := p.DeepCopy()
			other.Spec.DNSConfig.Nameservers = append(other.Spec.DNSConfig.Nameservers, "10.96.0.10")
			if len(checkAgentPod(other, addr)) == 0 {
				t.Error("a pod with a second nameserver passed")
			}
		})
	}
	t.Run("the explicit agent has no init container", func(t *testing.T) {
		p := &corev1.Pod{}
		mustStrict(t, "k8s/agent/agent-pod.yaml", p)
		if len(p.Spec.InitContainers) != 0 {
			t.Error("the explicit profile needs no NET_ADMIN")
		}
	})
}

// component is the part of a kustomize Component the transparent profile uses.
type component struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Patches    []struct {
		Target struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"target"`
		Patch string `json:"patch"`
	} `json:"patches"`
}

func TestTransparentProfile(t *testing.T) {
	var c component
	mustStrict(t, "k8s/transparent/kustomization.yaml", &c)
	if c.Kind != "Component" {
		t.Fatalf("kind %q: the profile is a Component an overlay adds", c.Kind)
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed: the profile is not rendered")
	}
	// An overlay as an operator writes it, on a copy of the layout.
	dir := t.TempDir()
	if out, err := exec.Command("cp", "-r", "k8s", dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	overlay := "resources: [k8s]\ncomponents: [k8s/transparent]\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(overlay), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubectl, "kustomize", dir).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v", err)
	}
	var svc corev1.Service
	var dep appsv1.Deployment
	pols := map[string]*networkingv1.NetworkPolicy{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := sigsyaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		var err error
		switch meta.Kind {
		case "Service":
			err = sigsyaml.UnmarshalStrict([]byte(doc), &svc)
		case "Deployment":
			err = sigsyaml.UnmarshalStrict([]byte(doc), &dep)
		case "NetworkPolicy":
			np := &networkingv1.NetworkPolicy{}
			err = sigsyaml.UnmarshalStrict([]byte(doc), np)
			pols[np.Name] = np
		}
		if err != nil {
			t.Fatalf("rendered %s: %v", meta.Kind, err)
		}
	}
	cports := map[string]int32{}
	for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
		cports[p.Name] = p.ContainerPort
	}
	transparent := map[string]bool{}
	for _, p := range svc.Spec.Ports {
		if p.Port == 80 || p.Port == 443 {
			n, ok := cports[p.TargetPort.StrVal]
			if !ok {
				t.Errorf("service port %d targets %v: no such container port", p.Port, p.TargetPort)
			}
			transparent[strconv.Itoa(int(n))+"/TCP"] = true
		}
	}
	if len(transparent) != 2 {
		t.Fatalf("the profile must serve 80 and 443 on the Service: %v", svc.Spec.Ports)
	}
	// The agents' check, widened by exactly the transparent listeners, still holds.
	for k := range gatewayPorts {
		transparent[k] = true
	}
	saved := gatewayPorts
	gatewayPorts = transparent
	defer func() { gatewayPorts = saved }()
	for _, e := range checkAgentPolicy(pols["sluice-agents-only-gateway"], dep.Spec.Template.Labels) {
		t.Error(e)
	}
	var reach []string
	for _, r := range pols["sluice-agents-only-gateway"].Spec.Egress {
		for _, p := range r.Ports {
			reach = append(reach, portOf(p))
		}
	}
	for k := range transparent {
		if !slices.Contains(reach, k) {
			t.Errorf("agents cannot reach the gateway's %s in the transparent profile: %v", k, reach)
		}
	}
	for _, e := range checkGatewayPolicy(pols["sluice-gateway-egress"]) {
		t.Error(e)
	}
}

// composeDefault is the default of a compose variable, "${NAME:-default}" -> "default".
var composeDefault = regexp.MustCompile(`^\$\{[A-Z_]+:-([^}]*)\}$`)

func expandDefault(s string) string {
	if m := composeDefault.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return s
}

func TestComposeResolver(t *testing.T) {
	b, err := os.ReadFile("compose/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			DNS       []string `yaml:"dns"`
			DNSSearch []string `yaml:"dns_search"`
			Networks  any      `yaml:"networks"` // a list, or a map with options
		} `yaml:"services"`
		Networks map[string]struct {
			IPAM struct {
				Config []struct {
					Subnet string `yaml:"subnet"`
				} `yaml:"config"`
			} `yaml:"ipam"`
		} `yaml:"networks"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	var gwAddr string
	if nets, ok := c.Services["gateway"].Networks.(map[string]any); ok {
		if sb, ok := nets["sandbox"].(map[string]any); ok {
			gwAddr, _ = sb["ipv4_address"].(string)
		}
	}
	gwAddr = expandDefault(gwAddr)
	a, err := netip.ParseAddr(gwAddr)
	if err != nil {
		t.Fatalf("the gateway needs a fixed address on the sandbox network: %q", gwAddr)
	}
	if got := c.Services["agent"].DNS; len(got) != 1 || expandDefault(got[0]) != gwAddr {
		t.Errorf("agent dns %v: want the gateway's %s alone", got, gwAddr)
	}
	if got := c.Services["agent"].DNSSearch; !slices.Equal(got, []string{"."}) {
		t.Errorf("agent dns_search %v: want none (\".\")", got)
	}
	cfg := c.Networks["sandbox"].IPAM.Config
	if len(cfg) != 1 {
		t.Fatalf("sandbox ipam %+v: one subnet", cfg)
	}
	if p, err := netip.ParsePrefix(expandDefault(cfg[0].Subnet)); err != nil || !p.Contains(a) {
		t.Errorf("the gateway's %s is not in the sandbox subnet %s (%v)", a, cfg[0].Subnet, err)
	}
}
