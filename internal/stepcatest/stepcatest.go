// Package stepcatest runs a real step-ca for tests: built from the version
// pinned in tools/step-ca (its own module: the gateway never links it), over
// a throwaway PKI shaped as in production — an offline tenant root, an
// online intermediate in step-ca, and a JWK provisioner whose template issues
// name-constrained CAs that may sign leaves only.
package stepcatest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// RequireEnv, set to 1, turns "step-ca cannot be built or run here" from a
// skip into a failure (CI sets it).
const RequireEnv = "SLUICE_REQUIRE_STEPCA"

// Options shape the step-ca a test gets.
type Options struct {
	// Permitted is the intermediates' permitted DNS domains. Nil: example.test.
	Permitted []string
	// MinTTL is the shortest intermediate step-ca issues. Zero: a second.
	MinTTL time.Duration
}

// CA is a running step-ca.
type CA struct {
	// URL is its base URL, on loopback.
	URL string
	// Root is the tenant root (offline: its key is not in step-ca).
	Root *x509.Certificate
	// Provisioner and Key are the JWK provisioner's name and private key.
	Provisioner string
	Key         *ecdsa.PrivateKey

	dir  string
	addr string
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds step-ca once per test binary, into a directory keyed by
// tools/step-ca/go.sum, so that later runs (and CI) reuse it.
func binary() (string, error) {
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		tools := filepath.Join(filepath.Dir(file), "..", "..", "tools", "step-ca")
		sum, err := os.ReadFile(filepath.Join(tools, "go.sum"))
		if err != nil {
			buildErr = fmt.Errorf("tools/step-ca: %w", err)
			return
		}
		h := sha256.Sum256(sum)
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir := filepath.Join(cache, "sluice-step-ca", hex.EncodeToString(h[:8]))
		binPath = filepath.Join(dir, "step-ca")
		if _, err := os.Stat(binPath); err == nil {
			return
		}
		tmp := binPath + ".tmp"
		os.MkdirAll(dir, 0o755)
		cmd := exec.Command("go", "build", "-trimpath", "-o", tmp, "github.com/smallstep/certificates/cmd/step-ca")
		cmd.Dir = tools
		// Pure Go (no smart-card support): the build needs no C libraries.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build step-ca: %v: %s", err, lastLines(out))
			return
		}
		buildErr = os.Rename(tmp, binPath)
	})
	return binPath, buildErr
}

// Start runs a step-ca for tb, stopped when tb ends. Where it cannot be
// built or run, tb is skipped, loudly, or failed when RequireEnv is set.
func Start(tb testing.TB, o Options) *CA {
	tb.Helper()
	c, err := start(tb.TempDir(), o)
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("step-ca required (%s=1) but cannot run: %v", RequireEnv, err)
		}
		tb.Skipf("step-ca NOT TESTED: %v (CI sets %s=1)", err, RequireEnv)
	}
	tb.Cleanup(c.Stop)
	return c
}

func start(dir string, o Options) (*CA, error) {
	bin, err := binary()
	if err != nil {
		return nil, err
	}
	if o.Permitted == nil {
		o.Permitted = []string{"example.test"}
	}
	if o.MinTTL <= 0 {
		o.MinTTL = time.Second
	}
	c := &CA{dir: dir, Provisioner: "sluice-replicas"}
	if err := c.writePKI(o); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c.addr = l.Addr().String()
	l.Close()
	c.URL = "https://" + c.addr
	if err := c.writeConfig(o); err != nil {
		return nil, err
	}
	if err := c.run(bin); err != nil {
		return nil, err
	}
	return c, nil
}

func newKey() *ecdsa.PrivateKey {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	return k
}

func (c *CA) writePKI(o Options) error {
	now := time.Now().Add(-time.Hour)
	rootKey, onlineKey := newKey(), newKey()
	// The root allows two CAs below it: step-ca's online intermediate, and
	// under it each replica's (path length 0).
	root := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Sluice test tenant root"},
		NotBefore: now, NotAfter: now.AddDate(5, 0, 0), IsCA: true, BasicConstraintsValid: true, MaxPathLen: 2,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	rootDER, err := x509.CreateCertificate(rand.Reader, root, root, &rootKey.PublicKey, rootKey)
	if err != nil {
		return err
	}
	c.Root, _ = x509.ParseCertificate(rootDER)
	online := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "Sluice test online intermediate"},
		NotBefore: now, NotAfter: now.AddDate(1, 0, 0), IsCA: true, BasicConstraintsValid: true, MaxPathLen: 1,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature}
	onlineDER, err := x509.CreateCertificate(rand.Reader, online, c.Root, &onlineKey.PublicKey, rootKey)
	if err != nil {
		return err
	}
	keyDER, _ := x509.MarshalECPrivateKey(onlineKey)
	for name, b := range map[string]*pem.Block{
		"root.crt":   {Type: "CERTIFICATE", Bytes: rootDER},
		"online.crt": {Type: "CERTIFICATE", Bytes: onlineDER},
		"online.key": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(c.dir, name), pem.EncodeToMemory(b), 0o600); err != nil {
			return err
		}
	}
	c.Key = newKey()
	return nil
}

// template is the provisioner's X.509 template: a CA for leaves only, its
// names constrained, whatever the CSR asks.
func template(permitted []string) string {
	p, _ := json.Marshal(permitted)
	return `{
	"subject": {{ toJson .Subject }},
	"keyUsage": ["certSign", "crlSign"],
	"basicConstraints": {"isCA": true, "maxPathLen": 0},
	"nameConstraints": {"critical": true, "permittedDNSDomains": ` + string(p) + `}
}`
}

func (c *CA) writeConfig(o Options) error {
	jwk := publicJWK(&c.Key.PublicKey)
	cfg := map[string]any{
		"root":     filepath.Join(c.dir, "root.crt"),
		"crt":      filepath.Join(c.dir, "online.crt"),
		"key":      filepath.Join(c.dir, "online.key"),
		"address":  c.addr,
		"dnsNames": []string{"127.0.0.1", "localhost"},
		"logger":   map[string]string{"format": "text"},
		"authority": map[string]any{
			"provisioners": []any{map[string]any{
				"type": "JWK", "name": c.Provisioner, "key": jwk,
				"claims": map[string]any{
					"minTLSCertDuration": o.MinTTL.String(), "maxTLSCertDuration": "24h", "defaultTLSCertDuration": "8h",
				},
				"options": map[string]any{"x509": map[string]any{"template": template(o.Permitted)}},
			}},
		},
		"tls": map[string]any{"minVersion": 1.2, "maxVersion": 1.3},
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	return os.WriteFile(filepath.Join(c.dir, "ca.json"), b, 0o600)
}

func (c *CA) run(bin string) error {
	log, err := os.Create(filepath.Join(c.dir, "step-ca.log"))
	if err != nil {
		return err
	}
	c.log = log
	c.cmd = exec.Command(bin, filepath.Join(c.dir, "ca.json"))
	c.cmd.Stdout, c.cmd.Stderr = log, log
	c.cmd.Env = append(os.Environ(), "STEPPATH="+c.dir, "HOME="+c.dir)
	if err := c.cmd.Start(); err != nil {
		return err
	}
	c.done = make(chan struct{})
	go func() { c.cmd.Wait(); close(c.done) }()
	pool := x509.NewCertPool()
	pool.AddCert(c.Root)
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := hc.Get(c.URL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.done:
			b, _ := os.ReadFile(log.Name())
			return fmt.Errorf("step-ca exited: %s", lastLines(b))
		default:
		}
		if time.Now().After(deadline) {
			c.Stop()
			return fmt.Errorf("step-ca not ready after 30s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop ends step-ca (as when it is unreachable); it is safe to call twice.
func (c *CA) Stop() {
	if c.cmd == nil || c.cmd.Process == nil {
		return
	}
	c.cmd.Process.Kill()
	<-c.done
	c.log.Close()
}

// Log is what step-ca wrote, for a failing test.
func (c *CA) Log() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "step-ca.log"))
	return string(b)
}

// KeyPEM is the provisioner key as the config's provisioner_key_file holds it.
func (c *CA) KeyPEM() []byte {
	der, _ := x509.MarshalECPrivateKey(c.Key)
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

// RootPEM is the tenant root.
func (c *CA) RootPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Root.Raw})
}

func publicJWK(k *ecdsa.PublicKey) map[string]string {
	x, y := make([]byte, 32), make([]byte, 32)
	k.X.FillBytes(x)
	k.Y.FillBytes(y)
	enc := base64.RawURLEncoding.EncodeToString
	j := `{"crv":"P-256","kty":"EC","x":"` + enc(x) + `","y":"` + enc(y) + `"}`
	sum := sha256.Sum256([]byte(j))
	return map[string]string{"use": "sig", "kty": "EC", "kid": enc(sum[:]), "crv": "P-256", "alg": "ES256",
		"x": enc(x), "y": enc(y)}
}

func lastLines(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-8):], " | ")
}
