package deploy_test

import (
	"net"
	"slices"
	"strconv"
	"testing"

	"github.com/sluice-egress/sluice/config"
)

// The policies' resolver settings match the manifests: the resolver listens on the
// container port the Service's 53 targets and answers with the Service's address.
func TestPolicyResolver(t *testing.T) {
	m := loadManifests(t)
	cfg, err := config.Load("k8s/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, port, err := net.SplitHostPort(cfg.Listen.DNS)
	if err != nil {
		t.Fatalf("listen.dns %q: the resolver is off", cfg.Listen.DNS)
	}
	found := false
	for _, p := range m.deployment.Spec.Template.Spec.Containers[0].Ports {
		if strconv.Itoa(int(p.ContainerPort)) == port {
			found = true
		}
	}
	if !found {
		t.Errorf("listen.dns port %s is no container port", port)
	}
	if !slices.Equal(cfg.DNS.Addrs, []string{m.service.Spec.ClusterIP}) {
		t.Errorf("dns.addrs %v: want the Service's clusterIP %s", cfg.DNS.Addrs, m.service.Spec.ClusterIP)
	}

	cc, err := config.Load("compose/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, port, _ := net.SplitHostPort(cc.Listen.DNS); port != "53" {
		t.Errorf("compose listen.dns %q: the agent's resolver is asked on 53", cc.Listen.DNS)
	}
	if !slices.Equal(cc.DNS.Addrs, []string{expandDefault("${SLUICE_DNS:-172.30.53.53}")}) {
		t.Errorf("compose dns.addrs %v", cc.DNS.Addrs)
	}
}
