package gateway

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"sync"
	"time"
)

// Session resumption inside inspected tunnels. Every tunnel's TLS server has
// a config of its own; left alone, each would invent its own ticket keys, so
// that no ticket the gateway issued could ever be redeemed and every
// reconnecting client (Node's agents and curl resume by default) paid a full
// handshake. The keys are derived instead from a secret of the gateway's and
// the tunnel's tenant, CONNECT host and leaf: a client resumes only into a
// tunnel of the same tenant, for the same host, under the same leaf (a
// re-minted leaf or a rotated CA ends resumption). A resumed handshake asks
// for no certificate, so the SNI check runs on every ClientHello
// (inspectConn's GetConfigForClient).

// ticketKeyLife is how long one secret issues tickets; it then decrypts them
// for as long again, so that a ticket lives two days at most.
const ticketKeyLife = 24 * time.Hour

// ticketSecrets is the gateway's resumption secret, rotated every
// ticketKeyLife. The zero value is ready: the first tunnel draws the secret.
type ticketSecrets struct {
	mu        sync.Mutex
	cur, prev [32]byte
	hasPrev   bool
	since     time.Time
}

// forTunnel returns the ticket keys of a tunnel of tenant for host under
// leaf: the current secret's first (it issues), the previous one's after.
func (s *ticketSecrets) forTunnel(tenant, host string, leaf *tls.Certificate) [][32]byte {
	secrets := s.current(time.Now())
	leafSum := sha256.Sum256(leaf.Certificate[0])
	keys := make([][32]byte, len(secrets))
	for i, secret := range secrets {
		m := hmac.New(sha256.New, secret[:])
		m.Write([]byte(tenant))
		m.Write([]byte{0})
		m.Write([]byte(host))
		m.Write([]byte{0})
		m.Write(leafSum[:])
		m.Sum(keys[i][:0])
	}
	return keys
}

// current rotates the secret when due and returns the ones in use.
func (s *ticketSecrets) current(now time.Time) [][32]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if age := now.Sub(s.since); s.since.IsZero() || age >= ticketKeyLife {
		s.prev, s.hasPrev = s.cur, !s.since.IsZero() && age < 2*ticketKeyLife
		rand.Read(s.cur[:]) // never fails: crypto/rand ends the program instead
		s.since = now
	}
	if s.hasPrev {
		return [][32]byte{s.cur, s.prev}
	}
	return [][32]byte{s.cur}
}
