package ca

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestExportEnv(t *testing.T) {
	a := MustAuthority(t, newStore(t), "acme")
	out := t.TempDir()
	const token = "tok/en+0123456789" // escaped differently in userinfo and in a query
	proxy := &url.URL{Scheme: "http", User: url.UserPassword("acme", token), Host: "gw.test:3128"}
	envPath, lines, err := a.ExportEnv(out, "/etc/sluice", proxy, []string{"GITHUB_TOKEN=ghp_phantom"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(envPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 || filepath.Base(envPath) != ExportEnvFile {
		t.Errorf("%s mode %v, want sluice.env 0600: it holds the proxy credential", envPath, st.Mode().Perm())
	}
	b, _ := os.ReadFile(envPath)
	if string(b) != strings.Join(lines, "\n")+"\n" {
		t.Errorf("file and lines differ:\n%s", b)
	}
	for _, want := range []string{"HTTPS_PROXY=" + proxy.String(), "NODE_EXTRA_CA_CERTS=/etc/sluice/ca.pem",
		"SSL_CERT_FILE=/etc/sluice/bundle.pem", "GITHUB_TOKEN=ghp_phantom"} {
		if !slices.Contains(lines, want) {
			t.Errorf("no line %q in %q", want, lines)
		}
	}
	for _, f := range []string{ExportCAFile, ExportBundleFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	for _, l := range MaskEnv(lines, token) {
		if strings.Contains(l, token) || strings.Contains(l, url.QueryEscape(token)) || strings.Contains(l, "0123456789") {
			t.Errorf("masked line shows the token: %q", l)
		}
	}
}
