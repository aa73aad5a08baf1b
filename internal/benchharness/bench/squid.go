package bench

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// squidHosts is how many cold names (ColdHost) squid's hosts file resolves: squid asks
// no DNS server, and its hosts file knows no wildcards.
const squidHosts = 100_000

// squidConf is squid's whole configuration, as close to the gateway's work as squid
// goes: every CONNECT bumped with a leaf minted for its host by a CA of its own
// (certificates cached in memory), upstream TLS verified against the upstream's CA, no
// cache, no access log, one worker. It reaches only the upstream's address and port: the
// names resolve from its own hosts file, and DNS goes to a loopback port where nothing
// answers (a name outside the file fails within 2 s). %[1]s is the directory, %[2]d squid's port, %[3]d the upstream's, %[4]s the
// certificate helper.
const squidConf = `
http_port 127.0.0.1:%[2]d ssl-bump generate-host-certificates=on dynamic_cert_mem_cache_size=16MB tls-cert=%[1]s/ca.pem tls-key=%[1]s/ca.key
sslcrtd_program %[4]s -s %[1]s/ssl_db -M 16MB
sslcrtd_children 8 startup=1 idle=1
ssl_bump bump all
tls_outgoing_options cafile=%[1]s/upstream-ca.pem min-version=1.2
acl upstream dst 127.0.0.1/32
acl upstream_port port %[3]d
http_access allow upstream upstream_port
http_access deny all
hosts_file %[1]s/hosts
dns_nameservers 127.0.0.1
dns_timeout 2 seconds
dns_retransmit_interval 1 seconds
access_log none
cache_log %[1]s/cache.log
cache deny all
cache_mem 0 MB
workers 1
pid_filename %[1]s/squid.pid
coredump_dir %[1]s
shutdown_lifetime 0 seconds
max_filedescriptors 16384
netdb_filename none
pinger_enable off
icp_port 0
htcp_port 0
logfile_rotate 0
`

// squid is a running squid.
type squid struct {
	cmd   *exec.Cmd
	done  chan error
	dir   string
	addr  string
	roots *x509.CertPool // trusts squid's CA
}

// startSquid writes squid's configuration, CA and hosts file into a directory of its
// own, starts bin in the foreground and waits until it accepts connections.
func startSquid(bin string, upstreamPort int, upstreamCA []byte) (_ *squid, err error) {
	certgen, err := findCertgen(bin)
	if err != nil {
		return nil, err
	}
	s := &squid{}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	if s.dir, err = os.MkdirTemp("", "sluice-bench-squid-"); err != nil {
		return nil, fmt.Errorf("bench: squid dir: %w", err)
	}
	// squid started as root runs as its own user, which must read and write here.
	if err := os.Chmod(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: squid dir: %w", err)
	}
	caPEM, keyPEM, err := squidCA()
	if err != nil {
		return nil, err
	}
	s.roots = x509.NewCertPool()
	s.roots.AppendCertsFromPEM(caPEM)
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var hosts strings.Builder
	hosts.WriteString("127.0.0.1 " + Domain + "\n")
	for i := 1; i <= squidHosts; i++ {
		fmt.Fprintf(&hosts, "127.0.0.1 n%d.%s\n", i, Domain)
	}
	conf := filepath.Join(s.dir, "squid.conf")
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"ca.pem", caPEM}, {"ca.key", keyPEM}, {"upstream-ca.pem", upstreamCA},
		{"hosts", []byte(hosts.String())},
		{"squid.conf", fmt.Appendf(nil, squidConf, s.dir, port, upstreamPort, certgen)},
	} {
		if err := os.WriteFile(filepath.Join(s.dir, f.name), f.data, 0o644); err != nil {
			return nil, fmt.Errorf("bench: squid %s: %w", f.name, err)
		}
	}
	if out, err := exec.Command(certgen, "-c", "-s", filepath.Join(s.dir, "ssl_db"), "-M", "16MB").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("bench: %s -c: %v: %s", certgen, err, out)
	}
	if err := chownToSquid(s.dir); err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, "-N", "-f", conf)
	s.cmd.Stdout, s.cmd.Stderr = os.Stderr, os.Stderr
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start squid: %w", err)
	}
	s.done = make(chan error, 1)
	go func() { s.done <- s.cmd.Wait() }()
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		select {
		case err := <-s.done:
			s.done <- err
			return nil, fmt.Errorf("bench: squid ended at start (%v): %s", err, s.logTail())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("bench: squid does not accept on %s after 30 s: %s", s.addr, s.logTail())
		}
	}
}

func (s *squid) pid() int { return s.cmd.Process.Pid }

// stop ends squid (SIGTERM; killed after 10 s) and removes its directory.
func (s *squid) stop() error {
	var err error
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
			err = errors.New("bench: squid did not end within 10 s of SIGTERM: killed")
		}
	}
	if s.dir != "" {
		err = errors.Join(err, os.RemoveAll(s.dir))
	}
	return err
}

// logTail is the end of squid's cache.log, for an error.
func (s *squid) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "cache.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// findCertgen finds security_file_certgen on PATH or where Debian puts it, beside
// squid's other helpers.
func findCertgen(squidBin string) (string, error) {
	if p, err := exec.LookPath("security_file_certgen"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/lib/squid/security_file_certgen", "/usr/libexec/squid/security_file_certgen",
		filepath.Join(filepath.Dir(squidBin), "security_file_certgen")} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", errors.New("bench: squid's security_file_certgen not found (install squid-openssl)")
}

// chownToSquid hands dir to squid's user ("proxy" on Debian) when run as root: squid
// switches to it, and its helper writes the certificate database.
func chownToSquid(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("proxy")
	if err != nil {
		return fmt.Errorf("bench: squid's user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// squidCA mints squid's signing CA (benchCA) and returns its certificate and key in
// PEM; the key is removed with squid's directory.
func squidCA() (certPEM, keyPEM []byte, err error) {
	der, key, err := benchCA("sluice bench squid CA")
	if err != nil {
		return nil, nil, fmt.Errorf("bench: squid %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: squid CA key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("bench: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
