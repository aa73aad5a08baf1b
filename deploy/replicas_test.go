package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/sluice-egress/sluice/config"
)

// replicaManifests is deploy/replicas/k8s decoded strictly.
type replicaManifests struct {
	kust       kustomization
	deployment *appsv1.Deployment
	pdb        *policyv1.PodDisruptionBudget
	hpa        *autoscalingv2.HorizontalPodAutoscaler
	services   map[string]*corev1.Service
}

func loadReplicaManifests(t *testing.T) *replicaManifests {
	t.Helper()
	m := &replicaManifests{services: map[string]*corev1.Service{}}
	dir := "replicas/k8s"
	mustStrict(t, filepath.Join(dir, "kustomization.yaml"), &m.kust)
	listed := map[string]bool{"kustomization.yaml": true}
	for _, g := range m.kust.ConfigMapGenerator {
		for _, f := range g.Files {
			listed[f] = true
		}
	}
	for _, r := range m.kust.Resources {
		listed[r] = true
		path := filepath.Join(dir, r)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Kind string `json:"kind"`
		}
		sigsyaml.Unmarshal(b, &meta)
		switch meta.Kind {
		case "Deployment":
			m.deployment = &appsv1.Deployment{}
			mustStrict(t, path, m.deployment)
		case "PodDisruptionBudget":
			m.pdb = &policyv1.PodDisruptionBudget{}
			mustStrict(t, path, m.pdb)
		case "HorizontalPodAutoscaler":
			m.hpa = &autoscalingv2.HorizontalPodAutoscaler{}
			mustStrict(t, path, m.hpa)
		case "Service":
			s := &corev1.Service{}
			mustStrict(t, path, s)
			m.services[s.Name] = s
		case "Namespace":
			mustStrict(t, path, &corev1.Namespace{})
		default:
			t.Fatalf("%s: unexpected kind %q", path, meta.Kind)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		if !listed[filepath.Base(f)] {
			t.Errorf("%s is not in kustomization.yaml", f)
		}
	}
	if m.deployment == nil || m.pdb == nil || m.hpa == nil {
		t.Fatal("the replicas layout needs a Deployment, a PodDisruptionBudget and a HorizontalPodAutoscaler")
	}
	return m
}

func TestReplicasManifests(t *testing.T) {
	m := loadReplicaManifests(t)
	d := m.deployment
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		d.Spec.Strategy.RollingUpdate == nil || d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Error("several replicas, rolled with none unavailable")
	}
	sel := d.Spec.Selector.MatchLabels
	if m.pdb.Spec.Selector == nil || !mapsEqual(m.pdb.Spec.Selector.MatchLabels, sel) || m.pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("the PodDisruptionBudget must select the replicas and allow one down: %+v", m.pdb.Spec)
	}
	h := m.hpa.Spec
	if h.ScaleTargetRef.Kind != "Deployment" || h.ScaleTargetRef.Name != d.Name || h.MinReplicas == nil || *h.MinReplicas < 2 ||
		len(h.Metrics) != 1 || h.Metrics[0].Resource == nil || h.Metrics[0].Resource.Name != corev1.ResourceCPU {
		t.Errorf("the autoscaler must scale the Deployment on CPU from at least 2: %+v", h)
	}
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.Exec == nil || !slices.Contains(c.ReadinessProbe.Exec.Command, "--ready") {
		t.Error("readiness must be /readyz (healthcheck --ready): store, CA and peers")
	}
	if c.Resources.Requests.Cpu().IsZero() {
		t.Error("CPU requests: the autoscaler's utilisation is relative to them")
	}
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil {
			t.Errorf("volume %s: replicas share PostgreSQL, not a volume", v.Name)
		}
		if v.Name == "policy" && v.ConfigMap == nil {
			t.Error("the policy comes from the ConfigMap")
		}
	}
	for _, mnt := range c.VolumeMounts {
		if mnt.SubPath != "" {
			t.Errorf("mount %s uses subPath: ConfigMap and Secret updates would not reach it", mnt.Name)
		}
	}
	for _, dep := range []string{"sluice-postgres", "sluice-step-ca"} {
		if s := m.services[dep]; s == nil || s.Spec.Type != corev1.ServiceTypeExternalName {
			t.Errorf("named dependency %s: an ExternalName Service", dep)
		}
	}
	cfg, err := config.Load("replicas/k8s/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.Driver != config.StorePostgres || cfg.Store.DSNFile == "" {
		t.Errorf("store %+v: postgres, by dsn_file", cfg.Store)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestReplicasCompose(t *testing.T) {
	path := "replicas/compose/docker-compose.yml"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Networks map[string]struct {
			Internal bool `yaml:"internal"`
		} `yaml:"networks"`
		Services map[string]struct {
			Deploy struct {
				Replicas int `yaml:"replicas"`
			} `yaml:"deploy"`
			Networks any      `yaml:"networks"`
			Volumes  []string `yaml:"volumes"`
			CapDrop  []string `yaml:"cap_drop"`
			ReadOnly bool     `yaml:"read_only"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	gw := c.Services["gateway"]
	if gw.Deploy.Replicas != 3 {
		t.Errorf("gateway replicas %d, want 3", gw.Deploy.Replicas)
	}
	for _, dep := range []string{"postgres", "step-ca"} {
		if _, ok := c.Services[dep]; !ok {
			t.Errorf("no %s service", dep)
		}
		if got := networkNames(c.Services[dep].Networks); !slices.Equal(got, []string{"store"}) {
			t.Errorf("%s networks %v: the store network only", dep, got)
		}
	}
	if !c.Networks["store"].Internal || !c.Networks["sandbox"].Internal {
		t.Error("the store and sandbox networks are internal")
	}
	if got := networkNames(c.Services["agent"].Networks); !slices.Equal(got, []string{"sandbox"}) {
		t.Errorf("agent networks %v", got)
	}
	for _, v := range c.Services["agent"].Volumes {
		if p := strings.Split(v, ":")[0]; p != "trust" {
			t.Errorf("the agent mounts %s", p)
		}
	}
	if !slices.Contains(gw.CapDrop, "ALL") || !gw.ReadOnly {
		t.Error("gateway: cap_drop ALL and read_only")
	}
	cfg, err := config.Load("replicas/compose/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.Driver != config.StorePostgres || cfg.Store.DSNFile == "" {
		t.Errorf("store %+v", cfg.Store)
	}
	if strings.Contains(string(b), "password=") && !strings.Contains(string(b), "password=%s") {
		t.Error("a password written in the compose file")
	}
	if p, err := exec.LookPath("docker-compose"); err == nil {
		if out, err := exec.Command(p, "-f", path, "config", "-q").CombinedOutput(); err != nil {
			t.Fatalf("docker-compose config: %v\n%s", err, out)
		}
	}
}
