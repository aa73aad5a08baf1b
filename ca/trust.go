package ca

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/sluice-egress/sluice/internal/fileutil"
)

// Names of the files Export writes.
const (
	ExportCAFile     = "ca.pem"
	ExportBundleFile = "bundle.pem"
)

// ErrNoSystemRoots: none of the usual root store locations holds a PEM certificate.
var ErrNoSystemRoots = fmt.Errorf("ca: no system root store found: %w", fs.ErrNotExist)

// systemRootFiles are the usual Linux locations, in the order Go's crypto/x509 tries them.
var systemRootFiles = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Gentoo, Arch
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL 6
	"/etc/ssl/ca-bundle.pem",                            // openSUSE
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7+
	"/etc/ssl/cert.pem",                                 // Alpine
}

// SystemRootsPEM returns the PEM of the machine's root store: SSL_CERT_FILE if set
// and readable, else the first existing of the usual Linux locations. It returns
// ErrNoSystemRoots when none holds a certificate.
func SystemRootsPEM() ([]byte, error) {
	var paths []string
	if f := os.Getenv("SSL_CERT_FILE"); f != "" {
		paths = append(paths, f)
	}
	return firstRoots(append(paths, systemRootFiles...))
}

func firstRoots(paths []string) ([]byte, error) {
	for _, p := range paths {
		b, err := os.ReadFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, fmt.Errorf("ca: system roots: %w", err)
		}
		if hasCertificate(b) {
			return b, nil
		}
	}
	return nil, ErrNoSystemRoots
}

func hasCertificate(b []byte) bool {
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return false
		}
		if block.Type == "CERTIFICATE" {
			return true
		}
	}
}

// Export writes the trust material a container mounts: ca.pem (the tenant CA
// alone) and bundle.pem (the system roots + the tenant CA) into outDir (created
// 0755, files 0644), and returns their paths. Without a system root store the
// bundle is just the tenant CA, and a warning is logged.
func (a *Authority) Export(outDir string) (caPath, bundlePath string, err error) {
	if outDir == "" {
		return "", "", errors.New("ca: export: empty directory")
	}
	ok, err := exists(outDir)
	if err != nil {
		return "", "", fmt.Errorf("ca: export: %w", err)
	}
	if !ok {
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			return "", "", fmt.Errorf("ca: export: %w", err)
		}
		if err := os.Chmod(outDir, 0o755); err != nil { // MkdirAll is subject to the umask
			return "", "", fmt.Errorf("ca: export: %w", err)
		}
	}
	roots, err := SystemRootsPEM()
	if err != nil {
		a.store.logger().Warn("ca: export: no system roots, bundle holds the tenant CA only",
			logTenant, a.tenant, logErr, err.Error())
		roots = nil
	}
	var bundle bytes.Buffer
	bundle.Write(roots)
	if len(roots) > 0 && roots[len(roots)-1] != '\n' {
		bundle.WriteByte('\n')
	}
	bundle.Write(a.certPEM)

	caPath = filepath.Join(outDir, ExportCAFile)
	bundlePath = filepath.Join(outDir, ExportBundleFile)
	if err := fileutil.WriteFile(caPath, a.certPEM, 0o644); err != nil {
		return "", "", fmt.Errorf("ca: export %s: %w", caPath, err)
	}
	if err := fileutil.WriteFile(bundlePath, bundle.Bytes(), 0o644); err != nil {
		return "", "", fmt.Errorf("ca: export %s: %w", bundlePath, err)
	}
	return caPath, bundlePath, nil
}

// trustEnvBundle lists the variables that read a full root bundle: each replaces
// its tool's roots, so it must get the system roots as well as the tenant CA.
var trustEnvBundle = []string{
	"SSL_CERT_FILE",           // OpenSSL, curl, Go, Ruby, rustls-native-certs
	"CURL_CA_BUNDLE",          // curl and libcurl users that ignore SSL_CERT_FILE
	"REQUESTS_CA_BUNDLE",      // Python requests (certifi ignores the system store)
	"PIP_CERT",                // pip
	"GIT_SSL_CAINFO",          // git over HTTPS
	"CARGO_HTTP_CAINFO",       // cargo
	"AWS_CA_BUNDLE",           // AWS CLI and SDKs
	"DENO_CERT",               // Deno
	"NPM_CONFIG_CAFILE",       // npm and yarn 1
	"YARN_HTTPS_CA_FILE_PATH", // yarn 2+
}

// TrustEnv returns the KEY=VALUE lines that point every common tool at the
// exported trust files, given the paths as the container sees them: the bundle
// for tools whose setting replaces their roots, and NODE_EXTRA_CA_CERTS to the
// CA alone (Node adds it to its built-in roots). Sorted by key. The paths are
// used verbatim and must not contain newlines.
func TrustEnv(caPath, bundlePath string) []string {
	env := make([]string, 0, len(trustEnvBundle)+1)
	for _, k := range trustEnvBundle {
		env = append(env, k+"="+bundlePath)
	}
	env = append(env, "NODE_EXTRA_CA_CERTS="+caPath)
	sort.Strings(env)
	return env
}
