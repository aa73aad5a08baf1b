package phantom

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluice-egress/sluice/internal/fileutil"
)

// File in the data directory that keeps minted phantoms (mode 0600), so that
// env files exported before a restart stay valid after it.
const StoreFile = "phantoms.json"

// record is what is kept of one phantom. The phantom is kept (it is what the
// sandbox holds and worth nothing elsewhere); the real secret never is.
type record struct {
	Tenant      string    `json:"tenant"`
	Run         string    `json:"run,omitempty"`
	Credential  string    `json:"credential"`
	Fingerprint string    `json:"fingerprint"`
	Phantom     string    `json:"phantom"`
	Created     time.Time `json:"created"`
}

type runKey struct{ tenant, run string }

// Registry mints phantoms per tenant and run and finds them again. Its zero
// value works in memory with a per-process fingerprint key and no
// credentials. It implements scanner.PhantomSet.
type Registry struct {
	// Dir is the data directory where StoreFile is kept; "": memory only.
	Dir string
	// Key is the fingerprint key (scanner.LoadOrCreateKey); nil: a random key
	// per process.
	Key []byte
	// Credentials are the tenants' credentials, by tenant. Set before the
	// first call; SetCredentials replaces them later.
	Credentials map[string][]*Credential

	once    sync.Once
	mu      sync.Mutex
	modTime time.Time // of StoreFile as last read or written
	size    int64
	checked time.Time                    // when StoreFile was last looked at
	recs    map[runKey]map[string]record // by run, then credential name
	extra   map[runKey][]*Credential     // a run's own credentials (not persisted)
	uses    map[runKey][]*Use
	byFP    map[string]string // phantom fingerprint -> credential name
	lengths map[int]bool
}

// load initialises the registry once and rereads StoreFile when another
// process (sluice ca export) changed it since.
func (r *Registry) load() error {
	r.once.Do(func() {
		if r.Key == nil {
			r.Key = make([]byte, 32)
			rand.Read(r.Key)
		}
		r.recs = map[runKey]map[string]record{}
		r.extra = map[runKey][]*Credential{}
		r.uses = map[runKey][]*Use{}
		r.reindex()
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refreshLocked()
}

// refreshLocked rereads StoreFile when its time or size changed; with mu held.
func (r *Registry) refreshLocked() error {
	if r.Dir == "" {
		return nil
	}
	// At most one look a second: this runs for every request.
	if now := time.Now(); now.Sub(r.checked) < time.Second {
		return nil
	} else {
		r.checked = now
	}
	path := filepath.Join(r.Dir, StoreFile)
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("phantom: %w", err)
	}
	if st.ModTime().Equal(r.modTime) && st.Size() == r.size {
		return nil
	}
	if st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("phantom: %s: mode %v, want 0600", path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("phantom: %w", err)
	}
	var list []record
	if err := json.Unmarshal(b, &list); err != nil {
		return fmt.Errorf("phantom: %s: %w", path, err)
	}
	recs := map[runKey]map[string]record{}
	for _, rec := range list {
		k := runKey{rec.Tenant, rec.Run}
		if recs[k] == nil {
			recs[k] = map[string]record{}
		}
		recs[k][rec.Credential] = rec
	}
	r.recs, r.modTime, r.size = recs, st.ModTime(), st.Size()
	r.uses = map[runKey][]*Use{}
	r.reindex()
	return nil
}

// reindex rebuilds the fingerprint index from the records; with mu held.
func (r *Registry) reindex() {
	r.byFP, r.lengths = map[string]string{}, map[int]bool{}
	u := &Use{key: r.Key}
	for _, m := range r.recs {
		for _, rec := range m {
			r.byFP[u.fingerprint(rec.Phantom)] = rec.Credential
			r.lengths[len(rec.Phantom)] = true
		}
	}
}

// SetCredentials replaces the tenants' credentials (on a config reload):
// phantoms already minted for a credential that is still there stay valid.
func (r *Registry) SetCredentials(creds map[string][]*Credential) {
	r.load()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Credentials = creds
	r.uses = map[runKey][]*Use{}
}

// Mint returns the env lines (NAME=phantom) of the tenant's credentials, plus
// extra for this run, minting phantoms for run (or for the tenant itself
// when run is ""). It is idempotent: a run minted before, also before a
// restart, gets the same phantoms back. The real secrets are not read.
func (r *Registry) Mint(tenant, run string, extra ...*Credential) (env []string, err error) {
	if err := r.load(); err != nil {
		return nil, err
	}
	for _, c := range extra {
		if err := c.Check(); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checked = time.Time{} // another process may have minted a moment ago
	if err := r.refreshLocked(); err != nil {
		return nil, err
	}
	k := runKey{tenant, run}
	if len(extra) > 0 {
		r.extra[k] = extra
	}
	creds := r.credsLocked(k)
	if r.recs[k] == nil {
		r.recs[k] = map[string]record{}
	}
	changed := false
	now := time.Now().UTC().Truncate(time.Second)
	for _, c := range creds {
		rec, ok := r.recs[k][c.Name]
		if ok && fits(c, rec.Phantom) {
			continue
		}
		v, err := r.mintUnique(c)
		if err != nil {
			return nil, err
		}
		r.recs[k][c.Name] = record{Tenant: tenant, Run: run, Credential: c.Name,
			Fingerprint: (&Use{key: r.Key}).fingerprint(v), Phantom: v, Created: now}
		changed = true
	}
	if changed {
		r.reindex()
		delete(r.uses, k)
		if err := r.saveLocked(); err != nil {
			return nil, err
		}
	}
	for _, c := range creds {
		for _, name := range c.EnvNames() {
			env = append(env, name+"="+r.recs[k][c.Name].Phantom)
		}
	}
	return env, nil
}

// mintUnique mints a phantom no other run holds.
func (r *Registry) mintUnique(c *Credential) (string, error) {
	u := &Use{key: r.Key}
	for range 8 {
		v, err := c.mint()
		if err != nil {
			return "", err
		}
		if _, dup := r.byFP[u.fingerprint(v)]; !dup {
			return v, nil
		}
	}
	return "", fmt.Errorf("phantom: credential %s: could not mint a unique phantom", c.Name)
}

// fits reports whether a stored phantom still has the credential's shape
// (the config may have changed since it was minted).
func fits(c *Credential, v string) bool {
	if c.Format != "" {
		p := c.shapePrefix()
		return strings.HasPrefix(v, p)
	}
	n := c.Length
	if n == 0 {
		n = max(DefaultLength, len(c.Prefix)+32)
	}
	return strings.HasPrefix(v, c.Prefix) && len(v) == n
}

// credsLocked are the credentials a run holds: the tenant's and its own.
func (r *Registry) credsLocked(k runKey) []*Credential {
	out := slices.Clone(r.Credentials[k.tenant])
	for _, c := range r.extra[k] {
		out = slices.DeleteFunc(out, func(o *Credential) bool { return o.Name == c.Name })
		out = append(out, c)
	}
	return out
}

// Forget drops a run's phantoms (the run ended): they become unknown values.
func (r *Registry) Forget(tenant, run string) error {
	if err := r.load(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.checked = time.Time{}
	if err := r.refreshLocked(); err != nil {
		return err
	}
	k := runKey{tenant, run}
	if _, ok := r.recs[k]; !ok {
		return nil
	}
	delete(r.recs, k)
	delete(r.extra, k)
	delete(r.uses, k)
	r.reindex()
	return r.saveLocked()
}

// Uses returns the credentials the run holds with their phantoms; nil when
// none were minted for it.
func (r *Registry) Uses(tenant, run string) []*Use {
	if r.load() != nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k := runKey{tenant, run}
	if us, ok := r.uses[k]; ok {
		return us
	}
	var us []*Use
	for _, c := range r.credsLocked(k) {
		rec, ok := r.recs[k][c.Name]
		if !ok || !fits(c, rec.Phantom) {
			continue
		}
		u := &Use{Credential: c, Tenant: tenant, Run: run, Phantom: rec.Phantom, key: r.Key, shape: c.shapePrefix(),
			hosts: c.hostPatterns()}
		u.Fingerprint = u.fingerprint(rec.Phantom)
		us = append(us, u)
	}
	r.uses[k] = us
	return us
}

// Phantom implements scanner.PhantomSet: the credential's name when fp is
// the fingerprint of a phantom of any tenant or run.
func (r *Registry) Phantom(fp string) (string, bool) {
	if r.load() != nil {
		return "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	name, ok := r.byFP[fp]
	return name, ok
}

// Lengths implements scanner.PhantomSet.
func (r *Registry) Lengths() map[int]bool {
	if r.load() != nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lengths
}

// saveLocked writes StoreFile (0600, through a temporary file and a rename).
func (r *Registry) saveLocked() error {
	if r.Dir == "" {
		return nil
	}
	var list []record
	for _, k := range slices.SortedFunc(maps.Keys(r.recs), func(a, b runKey) int {
		return strings.Compare(a.tenant+"\x00"+a.run, b.tenant+"\x00"+b.run)
	}) {
		m := r.recs[k]
		names := slices.Collect(maps.Keys(m))
		sort.Strings(names)
		for _, n := range names {
			list = append(list, m[n])
		}
	}
	b, err := json.MarshalIndent(list, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.Dir, 0o700); err != nil {
		return fmt.Errorf("phantom: %w", err)
	}
	path := filepath.Join(r.Dir, StoreFile)
	if err := fileutil.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("phantom: %w", err)
	}
	if st, err := os.Stat(path); err == nil {
		r.modTime, r.size = st.ModTime(), st.Size()
	}
	return nil
}
