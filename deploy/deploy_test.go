// Package deploy_test checks the deployment files: the Kubernetes manifests
// decoded strictly into the API types, the compose topology, the images'
// Dockerfiles and the systemd unit. The deploy directory holds no Go logic.
package deploy_test

import (
	"bytes"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/sluice-egress/sluice/config"
)

// kustomization is the part of kustomize's Kustomization this layout uses;
// decoded strictly, so a field it does not know is an error.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Labels     []struct {
		Pairs map[string]string `json:"pairs"`
	} `json:"labels"`
	Resources          []string `json:"resources"`
	ConfigMapGenerator []struct {
		Name  string   `json:"name"`
		Files []string `json:"files"`
	} `json:"configMapGenerator"`
	Images []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// manifests is the k8s directory decoded.
type manifests struct {
	kust       kustomization
	deployment *appsv1.Deployment
	service    *corev1.Service
	pvc        *corev1.PersistentVolumeClaim
	namespace  *corev1.Namespace
	policies   map[string]*networkingv1.NetworkPolicy
}

func mustStrict(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := sigsyaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func loadManifests(t *testing.T) *manifests {
	t.Helper()
	m := &manifests{policies: map[string]*networkingv1.NetworkPolicy{}}
	mustStrict(t, "k8s/kustomization.yaml", &m.kust)
	for _, r := range m.kust.Resources {
		path := filepath.Join("k8s", r)
		var meta struct {
			Kind string `json:"kind"`
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("kustomization lists %s: %v", r, err)
		}
		if bytes.Contains(b, []byte("\n---")) {
			t.Fatalf("%s: one object per file", path)
		}
		if err := sigsyaml.Unmarshal(b, &meta); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch meta.Kind {
		case "Deployment":
			m.deployment = &appsv1.Deployment{}
			mustStrict(t, path, m.deployment)
		case "Service":
			m.service = &corev1.Service{}
			mustStrict(t, path, m.service)
		case "PersistentVolumeClaim":
			m.pvc = &corev1.PersistentVolumeClaim{}
			mustStrict(t, path, m.pvc)
		case "Namespace":
			m.namespace = &corev1.Namespace{}
			mustStrict(t, path, m.namespace)
		case "NetworkPolicy":
			np := &networkingv1.NetworkPolicy{}
			mustStrict(t, path, np)
			m.policies[np.Name] = np
		default:
			t.Fatalf("%s: unexpected kind %q", path, meta.Kind)
		}
	}
	if m.deployment == nil || m.service == nil || m.pvc == nil || m.namespace == nil || len(m.policies) != 2 {
		t.Fatalf("missing objects: deployment %v service %v pvc %v namespace %v, %d network policies",
			m.deployment != nil, m.service != nil, m.pvc != nil, m.namespace != nil, len(m.policies))
	}
	return m
}

func TestStrictDecodingRejectsUnknownFields(t *testing.T) {
	// The guard of every check below: a misspelt field must not pass.
	bad := []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replica: 1\n")
	if err := sigsyaml.UnmarshalStrict(bad, &appsv1.Deployment{}); err == nil {
		t.Fatal("a misspelt field decoded")
	}
}

func TestKustomizationListsEveryFile(t *testing.T) {
	m := loadManifests(t)
	listed := map[string]bool{"kustomization.yaml": true}
	for _, r := range m.kust.Resources {
		listed[r] = true
	}
	for _, g := range m.kust.ConfigMapGenerator {
		for _, f := range g.Files {
			listed[f] = true
		}
	}
	files, _ := filepath.Glob("k8s/*.yaml")
	for _, f := range files {
		if !listed[filepath.Base(f)] {
			t.Errorf("%s is not in kustomization.yaml", f)
		}
	}
	if m.kust.Namespace != m.namespace.Name {
		t.Errorf("kustomization namespace %q, Namespace object %q", m.kust.Namespace, m.namespace.Name)
	}
}

func TestDeployment(t *testing.T) {
	m := loadManifests(t)
	d := m.deployment
	pod := d.Spec.Template.Spec
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Error("one replica with Recreate: the store is on a ReadWriteOnce volume")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the gateway needs no service account token")
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context: %+v", psc)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("selector label %s=%s does not match the template", k, v)
		}
	}
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		t.Fatalf("want one container, got %d (+%d init)", len(pod.Containers), len(pod.InitContainers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container must drop every capability and add none: %+v", sc)
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || (sc.Privileged != nil && *sc.Privileged) {
		t.Errorf("container security context: %+v", sc)
	}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.Exec == nil || !slices.Contains(p.Exec.Command, "healthcheck") {
			t.Errorf("%s probe: want `sluice healthcheck`, got %+v", name, p)
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Limits[r]; !ok {
			t.Errorf("no %s limit", r)
		}
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("no %s request", r)
		}
	}

	// Volumes: the policy from the generated ConfigMap, tokens and the CA
	// passphrase from Secrets, data on the PVC.
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, vm := range c.VolumeMounts {
		if _, ok := vols[vm.Name]; !ok {
			t.Errorf("mount %s names no volume", vm.Name)
		}
		mounts[vm.Name] = vm
	}
	gen := m.kust.ConfigMapGenerator
	if len(gen) != 1 || vols["policy"].ConfigMap == nil || vols["policy"].ConfigMap.Name != gen[0].Name {
		t.Errorf("policy volume must use the generated ConfigMap %v", gen)
	}
	if vols["data"].PersistentVolumeClaim == nil || vols["data"].PersistentVolumeClaim.ClaimName != m.pvc.Name {
		t.Errorf("data volume must use the PVC %s", m.pvc.Name)
	}
	secretMounts := map[string]string{} // mount path -> secret
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			secretMounts[mounts[v.Name].MountPath] = v.Secret.SecretName
			if !mounts[v.Name].ReadOnly {
				t.Errorf("secret volume %s mounted writable", v.Name)
			}
		}
	}

	// The policy the ConfigMap carries loads, and the files it references
	// are where the Deployment mounts them.
	cfg, err := config.Load(filepath.Join("k8s", gen[0].Files[0]))
	if err != nil {
		t.Fatalf("the ConfigMap's policy: %v", err)
	}
	if !slices.Contains(c.Args, filepath.Join(mounts["policy"].MountPath, gen[0].Files[0])) {
		t.Errorf("args %v do not name the mounted policy", c.Args)
	}
	if cfg.DataDir != mounts["data"].MountPath {
		t.Errorf("data_dir %q is not the PVC mount %q", cfg.DataDir, mounts["data"].MountPath)
	}
	inSecret := func(what, path string) {
		if path == "" {
			return
		}
		if _, ok := secretMounts[filepath.Dir(path)]; !ok {
			t.Errorf("%s %s is not in a Secret volume (%v)", what, path, secretMounts)
		}
	}
	for name, tn := range cfg.Tenants {
		if tn.TokenFile == "" && tn.TokenEnv == "" {
			t.Errorf("tenant %s has no token reference", name)
		}
		inSecret("tenant "+name+" token_file", tn.TokenFile)
	}
	if cfg.CA.PassphraseFile == "" {
		t.Error("the CA keys must be encrypted with a passphrase from a Secret")
	}
	inSecret("ca.passphrase_file", cfg.CA.PassphraseFile)
	if port := proxyPort(t, cfg.Listen.Proxy); port != c.Ports[0].ContainerPort {
		t.Errorf("listen.proxy port %d, containerPort %d", port, c.Ports[0].ContainerPort)
	}
	if a, _ := netip.ParseAddrPort(cfg.Listen.Proxy); !a.Addr().IsUnspecified() {
		t.Errorf("listen.proxy %s: the Service cannot reach a loopback listener", cfg.Listen.Proxy)
	}
}

func proxyPort(t *testing.T, addr string) int32 {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		t.Fatalf("listen.proxy %q: %v", addr, err)
	}
	return int32(ap.Port())
}

func TestService(t *testing.T) {
	m := loadManifests(t)
	s := m.service
	for k, v := range s.Spec.Selector {
		if m.deployment.Spec.Template.Labels[k] != v {
			t.Errorf("service selector %s=%s matches no gateway pod", k, v)
		}
	}
	if s.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("service type %s: the proxy is for pods in the cluster only", s.Spec.Type)
	}
	names := map[string]bool{}
	for _, p := range m.deployment.Spec.Template.Spec.Containers[0].Ports {
		names[p.Name] = true
	}
	for _, p := range s.Spec.Ports {
		if !names[p.TargetPort.StrVal] {
			t.Errorf("service port %s targets %v, not a named container port", p.Name, p.TargetPort)
		}
	}
}

// egressAllows reports whether a policy lets its pods open a connection to
// addr:port (an ipBlock peer); pod and namespace peers are reported apart.
func egressAllows(np *networkingv1.NetworkPolicy, addr netip.Addr) bool {
	for _, r := range np.Spec.Egress {
		if len(r.To) == 0 {
			return true // to anywhere
		}
		for _, peer := range r.To {
			if peer.IPBlock == nil {
				continue
			}
			p := netip.MustParsePrefix(peer.IPBlock.CIDR)
			if !p.Contains(addr) {
				continue
			}
			excluded := false
			for _, e := range peer.IPBlock.Except {
				if netip.MustParsePrefix(e).Contains(addr) {
					excluded = true
				}
			}
			if !excluded {
				return true
			}
		}
	}
	return false
}

// clusterInternal are addresses the gateway must not reach.
var clusterInternal = []string{"10.96.0.1", "10.244.1.7", "172.17.0.1", "192.168.1.1", "169.254.169.254", "127.0.0.1", "100.64.0.1", "fd00::1", "fe80::1"}

func checkGatewayPolicy(np *networkingv1.NetworkPolicy) []string {
	var errs []string
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
		errs = append(errs, "no Egress policy type: egress unrestricted")
	}
	for _, a := range clusterInternal {
		if egressAllows(np, netip.MustParseAddr(a)) {
			errs = append(errs, "egress allows "+a)
		}
	}
	for _, a := range []string{"198.51.100.7", "2001:db8::1"} {
		if !egressAllows(np, netip.MustParseAddr(a)) {
			errs = append(errs, "egress refuses the internet address "+a)
		}
	}
	return errs
}

func TestNetworkPolicyGateway(t *testing.T) {
	m := loadManifests(t)
	np := m.policies["sluice-gateway-egress"]
	if np == nil {
		t.Fatal("no sluice-gateway-egress policy")
	}
	if np.Spec.PodSelector.MatchLabels["app.kubernetes.io/name"] != m.deployment.Spec.Template.Labels["app.kubernetes.io/name"] {
		t.Error("the gateway policy does not select the gateway pods")
	}
	for _, e := range checkGatewayPolicy(np) {
		t.Error(e)
	}
	t.Run("the check fails on a leaky policy", func(t *testing.T) {
		leaky := np.DeepCopy()
		leaky.Spec.Egress = append(leaky.Spec.Egress, networkingv1.NetworkPolicyEgressRule{
			To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}}})
		if len(checkGatewayPolicy(leaky)) == 0 {
			t.Fatal("a policy that reaches 10.0.0.0/8 passed")
		}
	})
	// Only agents may connect, and only to the proxy and the resolver.
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 1 ||
		np.Spec.Ingress[0].From[0].PodSelector.MatchLabels["sluice.dev/role"] != "agent" {
		t.Errorf("ingress: %+v", np.Spec.Ingress)
	}
	for _, r := range np.Spec.Ingress {
		for _, p := range r.Ports {
			if !gatewayPorts[portOf(p)] {
				t.Errorf("agents may connect to the gateway's %s", portOf(p))
			}
		}
	}
}

// gatewayPorts are the gateway's ports that agents may reach: the proxy and the
// resolver (after the Service's 53 -> 5353).
var gatewayPorts = map[string]bool{"3128/TCP": true, "5353/UDP": true, "5353/TCP": true}

// portOf is a NetworkPolicy port as "5353/UDP" (TCP when no protocol is given).
func portOf(p networkingv1.NetworkPolicyPort) string {
	proto := corev1.ProtocolTCP
	if p.Protocol != nil {
		proto = *p.Protocol
	}
	n := "any"
	if p.Port != nil {
		n = p.Port.String()
	}
	return n + "/" + string(proto)
}

// checkAgentPolicy: agents reach the gateway's proxy and resolver, nothing
// else; the cluster DNS least of all, since it answers and forwards any name.
func checkAgentPolicy(np *networkingv1.NetworkPolicy, gatewayLabels map[string]string) []string {
	var errs []string
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		errs = append(errs, "policy types must be Ingress and Egress")
	}
	if len(np.Spec.Ingress) != 0 {
		errs = append(errs, "agents accept connections")
	}
	for _, r := range np.Spec.Egress {
		if len(r.To) == 0 || len(r.Ports) == 0 {
			errs = append(errs, "an egress rule without peers or ports allows everything")
			continue
		}
		for _, p := range r.To {
			switch {
			case p.IPBlock != nil:
				errs = append(errs, "agents may reach an ipBlock "+p.IPBlock.CIDR)
			case p.PodSelector == nil:
				errs = append(errs, "a peer without pod selector matches whole namespaces")
			case p.NamespaceSelector != nil:
				errs = append(errs, "agents may reach pods in another namespace (the cluster DNS is a way out)")
			default:
				for k, v := range p.PodSelector.MatchLabels {
					if gatewayLabels[k] != v {
						errs = append(errs, "agents may reach pods other than the gateway")
					}
				}
				if len(p.PodSelector.MatchLabels) == 0 {
					errs = append(errs, "agents may reach every pod of the namespace")
				}
				for _, port := range r.Ports {
					if !gatewayPorts[portOf(port)] {
						errs = append(errs, "agents may reach the gateway's "+portOf(port))
					}
				}
			}
		}
	}
	return errs
}

func TestNetworkPolicyAgents(t *testing.T) {
	m := loadManifests(t)
	np := m.policies["sluice-agents-only-gateway"]
	if np == nil {
		t.Fatal("no sluice-agents-only-gateway policy")
	}
	labels := m.deployment.Spec.Template.Labels
	for _, e := range checkAgentPolicy(np, labels) {
		t.Error(e)
	}
	for _, a := range []string{"1.1.1.1", "10.0.0.1", "169.254.169.254"} {
		if egressAllows(np, netip.MustParseAddr(a)) {
			t.Errorf("agents may reach %s directly", a)
		}
	}
	t.Run("the check fails on a leaky policy", func(t *testing.T) {
		leaky := np.DeepCopy()
		leaky.Spec.Egress = append(leaky.Spec.Egress, networkingv1.NetworkPolicyEgressRule{
			To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}}}})
		if len(checkAgentPolicy(leaky, labels)) == 0 {
			t.Fatal("an agent policy with an ipBlock passed")
		}
		open := np.DeepCopy()
		open.Spec.Egress = append(open.Spec.Egress, networkingv1.NetworkPolicyEgressRule{})
		if len(checkAgentPolicy(open, labels)) == 0 {
			t.Fatal("an agent policy with an empty rule passed")
		}
		dns53 := intstr.FromInt32(53)
		kubeDNS := np.DeepCopy()
		kubeDNS.Spec.Egress = append(kubeDNS.Spec.Egress, networkingv1.NetworkPolicyEgressRule{
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
			}},
			Ports: []networkingv1.NetworkPolicyPort{{Port: &dns53}},
		})
		if len(checkAgentPolicy(kubeDNS, labels)) == 0 {
			t.Fatal("an agent policy that reaches the cluster DNS passed")
		}
		admin := intstr.FromInt32(8080)
		adminPort := np.DeepCopy()
		adminPort.Spec.Egress[0].Ports = append(adminPort.Spec.Egress[0].Ports, networkingv1.NetworkPolicyPort{Port: &admin})
		if len(checkAgentPolicy(adminPort, labels)) == 0 {
			t.Fatal("an agent policy that reaches the gateway's admin port passed")
		}
	})
}

// compose is the part of a compose file the checks read.
type compose struct {
	Services map[string]struct {
		Image       string         `yaml:"image"`
		NetworkMode string         `yaml:"network_mode"`
		Networks    any            `yaml:"networks"`
		Volumes     []string       `yaml:"volumes"`
		Ports       []string       `yaml:"ports"`
		CapDrop     []string       `yaml:"cap_drop"`
		ReadOnly    bool           `yaml:"read_only"`
		DependsOn   map[string]any `yaml:"depends_on"`
		Command     any            `yaml:"command"`
	} `yaml:"services"`
	Networks map[string]struct {
		Internal bool `yaml:"internal"`
	} `yaml:"networks"`
}

func networkNames(v any) []string {
	var out []string
	switch n := v.(type) {
	case []any:
		for _, x := range n {
			out = append(out, x.(string))
		}
	case map[string]any:
		for k := range n {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func TestCompose(t *testing.T) {
	b, err := os.ReadFile("compose/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if !c.Networks["sandbox"].Internal || c.Networks["egress"].Internal {
		t.Errorf("networks: sandbox must be internal, egress not: %+v", c.Networks)
	}
	gw, agent := c.Services["gateway"], c.Services["agent"]
	if got := networkNames(gw.Networks); !slices.Equal(got, []string{"egress", "sandbox"}) {
		t.Errorf("gateway networks %v", got)
	}
	if got := networkNames(agent.Networks); !slices.Equal(got, []string{"sandbox"}) || agent.NetworkMode != "" {
		t.Errorf("agent networks %v %q: the sandbox only", got, agent.NetworkMode)
	}
	if len(agent.Ports) != 0 {
		t.Error("the agent publishes nothing on the host")
	}
	for _, p := range gw.Ports {
		if !strings.HasPrefix(p, "127.0.0.1:") || !strings.HasSuffix(p, ":8080") {
			t.Errorf("the gateway publishes %q: only the dashboard, on the host's loopback", p)
		}
	}
	if !slices.Contains(gw.CapDrop, "ALL") || !gw.ReadOnly {
		t.Error("gateway: cap_drop ALL and read_only")
	}
	var trustRO bool
	for _, v := range agent.Volumes {
		parts := strings.Split(v, ":")
		if parts[0] == "data" || parts[0] == "secrets" {
			t.Errorf("the agent mounts %s: it would see CA keys or tokens", parts[0])
		}
		if parts[0] == "trust" && len(parts) == 3 && parts[2] == "ro" {
			trustRO = true
		}
	}
	if !trustRO {
		t.Error("the agent must mount the trust files read-only")
	}
	for _, name := range []string{"token", "export"} {
		if c.Services[name].NetworkMode != "none" {
			t.Errorf("one-shot %s needs no network", name)
		}
	}
	// The compose policy loads; the admin listener is not on the sandbox
	// network (the agent must not reach the API), and a user can log in.
	cc, err := config.Load("compose/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if ap, err := netip.ParseAddrPort(cc.Listen.Admin); err != nil || netip.MustParsePrefix("172.30.53.0/24").Contains(ap.Addr()) || ap.Addr().IsUnspecified() {
		t.Errorf("listen.admin %q: must be the gateway's egress address, not on the sandbox network nor every address", cc.Listen.Admin)
	}
	if len(cc.Dashboard.Users) == 0 {
		t.Error("the demo has no dashboard user")
	}
	// listen.admin is SLUICE_ADMIN's default, inside SLUICE_EGRESS_SUBNET's.
	if !strings.Contains(string(b), "ipv4_address: ${SLUICE_ADMIN:-172.30.54.10}") || !strings.HasPrefix(cc.Listen.Admin, expandDefault("${SLUICE_ADMIN:-172.30.54.10}")+":") ||
		!netip.MustParsePrefix(expandDefault("${SLUICE_EGRESS_SUBNET:-172.30.54.0/24}")).Contains(netip.MustParseAddrPort(cc.Listen.Admin).Addr()) {
		t.Errorf("listen.admin %q does not match the gateway's egress address in docker-compose.yml", cc.Listen.Admin)
	}
	if path, err := exec.LookPath("docker-compose"); err == nil {
		cmd := exec.Command(path, "-f", "compose/docker-compose.yml", "config", "-q")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("docker-compose config: %v\n%s", err, out)
		}
	} else {
		t.Log("docker-compose not installed: compose schema not checked")
	}
}

// finalStage is a Dockerfile's last stage with comments and the build
// stage's source prefix taken out.
func finalStage(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.LastIndex(s, "# --- final stage ---")
	if i < 0 {
		t.Fatalf("%s: no final stage marker", path)
	}
	var lines []string
	for _, l := range strings.Split(s[i:], "\n") {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		l = strings.ReplaceAll(l, "--from=build ", "")
		l = strings.ReplaceAll(l, " /ctx/", " ")
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

func TestDockerfiles(t *testing.T) {
	src, pre := finalStage(t, "image/Dockerfile"), finalStage(t, "image/Dockerfile.prebuilt")
	if src != pre {
		t.Fatalf("final stages differ:\n--- Dockerfile\n%s\n--- Dockerfile.prebuilt\n%s", src, pre)
	}
	for _, want := range []string{`^FROM scratch$`, `^USER 65532:65532$`, `^VOLUME \["/data"\]$`,
		`^HEALTHCHECK .*CMD \["/usr/local/bin/sluice", "healthcheck"\]$`, `^ENTRYPOINT \["/usr/local/bin/sluice"\]$`} {
		if !regexp.MustCompile(`(?m)` + want).MatchString(pre) {
			t.Errorf("final stage lacks %s", want)
		}
	}
	passwd, err := os.ReadFile("image/rootfs/etc/passwd")
	if err != nil || !strings.Contains(string(passwd), ":65532:65532:") {
		t.Errorf("rootfs/etc/passwd must name uid 65532: %v", err)
	}
}

// unit parses a systemd unit into section -> key -> values.
func unit(t *testing.T, path string) map[string]map[string][]string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := map[string]map[string][]string{}
	var sec string
	for n, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";"):
		case strings.HasPrefix(l, "[") && strings.HasSuffix(l, "]"):
			sec = l[1 : len(l)-1]
			u[sec] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(l, "=")
			if !ok || sec == "" {
				t.Fatalf("%s:%d: not a key=value in a section: %q", path, n+1, l)
			}
			u[sec][k] = append(u[sec][k], v)
		}
	}
	return u
}

func TestSystemdUnit(t *testing.T) {
	const path = "systemd/sluice.service"
	svc := unit(t, path)["Service"]
	want := map[string]string{
		"NoNewPrivileges":       "yes",
		"ProtectSystem":         "strict",
		"PrivateTmp":            "yes",
		"CapabilityBoundingSet": "",
		"AmbientCapabilities":   "",
		"DynamicUser":           "yes",
		"StateDirectory":        "sluice",
		"ProtectHome":           "yes",
		"PrivateDevices":        "yes",
		"RestrictSUIDSGID":      "yes",
	}
	for k, v := range want {
		got, ok := svc[k]
		if !ok || got[len(got)-1] != v {
			t.Errorf("%s=%q, want %q", k, got, v)
		}
	}
	exe := strings.Fields(svc["ExecStart"][0])
	if exe[0] != "/usr/local/bin/sluice" || exe[1] != "serve" || !slices.Contains(exe, "${STATE_DIRECTORY}") {
		t.Errorf("ExecStart %v: serve with the data in the state directory", exe)
	}
	if _, ok := svc["User"]; ok {
		t.Error("User= with DynamicUser")
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed: unit parsed, not verified")
		return
	}
	verify := func(t *testing.T, body string) string {
		// verify wants the ExecStart binary to exist: point it at one that does.
		dir := t.TempDir()
		p := filepath.Join(dir, "sluice.service")
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(body, "/usr/local/bin/sluice ", "/bin/true ")), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(analyze, "verify", p).CombinedOutput()
		if err != nil {
			return string(out) + err.Error()
		}
		return strings.TrimSpace(string(out))
	}
	b, _ := os.ReadFile(path)
	if out := verify(t, string(b)); out != "" {
		t.Errorf("systemd-analyze verify:\n%s", out)
	}
	t.Run("verify catches a misspelt directive", func(t *testing.T) {
		if out := verify(t, strings.Replace(string(b), "NoNewPrivileges=", "NoNewPrivilegez=", 1)); out == "" {
			t.Fatal("a unit with an unknown key verified clean")
		}
	})
}
