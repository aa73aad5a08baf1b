package scanner

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Files in the data directory.
const (
	KeyFile     = "scan.key"       // 32 random bytes, mode 0600: the fingerprint key
	CanaryFile  = "canaries.jsonl" // one CanaryRecord per line, mode 0600
	keyFileSize = 32
)

func randomKey() []byte {
	k := make([]byte, keyFileSize)
	if _, err := rand.Read(k); err != nil {
		panic("scanner: no randomness: " + err.Error())
	}
	return k
}

// LoadOrCreateKey returns the installation's fingerprint key from dir,
// creating it (0600) on first use. Concurrent first uses agree on one key.
func LoadOrCreateKey(dir string) ([]byte, error) {
	path := filepath.Join(dir, KeyFile)
	if k, err := readKey(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("scanner: key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".scan.key-*")
	if err != nil {
		return nil, fmt.Errorf("scanner: key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(randomKey()); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("scanner: key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("scanner: key: %w", err)
	}
	// Link fails when another process created the key first: then use theirs.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("scanner: key: %w", err)
	}
	return readKey(path)
}

func readKey(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("scanner: key %s: mode %v, want 0600", path, st.Mode().Perm())
	}
	k, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scanner: key: %w", err)
	}
	if len(k) != keyFileSize {
		return nil, fmt.Errorf("scanner: key %s: %d bytes, want %d", path, len(k), keyFileSize)
	}
	return k, nil
}

// Fingerprint is the keyed fingerprint of a secret: HMAC-SHA256 with the
// installation key, hex, 128 bits.
func Fingerprint(key []byte, secret string) string { return fingerprint(key, secret) }

func fingerprint(key []byte, secret string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(secret))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// CanaryRecord is what is stored of a canary: never its value.
type CanaryRecord struct {
	ID          string    `json:"id"`
	Tenant      string    `json:"tenant"`
	Run         string    `json:"run,omitempty"`
	Kind        string    `json:"kind"` // "aws-access-key-id", "aws-secret-access-key", "github-pat", "api-key"
	Fingerprint string    `json:"fingerprint"`
	Length      int       `json:"length"`
	Created     time.Time `json:"created"`
}

// Canary is a minted decoy credential; Value is shown once and never stored.
type Canary struct {
	CanaryRecord
	Value string `json:"value"`
}

// CanaryStore keeps canary records in Dir/canaries.jsonl. It implements
// CanarySet and notices records appended by another process.
type CanaryStore struct {
	// Dir is the data directory.
	Dir string
	// Key is the fingerprint key (LoadOrCreateKey).
	Key []byte

	mu      sync.Mutex
	modTime time.Time
	size    int64
	byFP    map[string]string
	lengths map[int]bool
	watch   canaryWatch
}

// Issue mints a set of canaries for tenant (and run) and stores their records.
func (c *CanaryStore) Issue(tenant, run string) ([]Canary, error) {
	id := hex.EncodeToString(randomKey()[:6])
	now := time.Now().UTC().Truncate(time.Second)
	vals := []struct{ kind, value string }{
		{"aws-access-key-id", "AKIA" + randomString(base32Upper, 16)},
		{"aws-secret-access-key", randomString(base64Chars, 40)},
		{"github-pat", githubToken("ghp_")},
		{"api-key", "sk-" + randomString(base62, 48)},
	}
	var out []Canary
	for i, v := range vals {
		out = append(out, Canary{Value: v.value, CanaryRecord: CanaryRecord{
			ID: fmt.Sprintf("cn-%s-%d", id, i+1), Tenant: tenant, Run: run, Kind: v.kind,
			Fingerprint: fingerprint(c.Key, v.value), Length: len(v.value), Created: now}})
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("scanner: canaries: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(c.Dir, CanaryFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("scanner: canaries: %w", err)
	}
	var b strings.Builder
	for _, cn := range out {
		line, _ := json.Marshal(cn.CanaryRecord)
		b.Write(line)
		b.WriteByte('\n')
	}
	// One write of whole lines: O_APPEND keeps concurrent issuers' lines apart.
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return nil, fmt.Errorf("scanner: canaries: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("scanner: canaries: %w", err)
	}
	// After the records: a scanner that sees the new generation reads them.
	if err := bumpCanaryGen(c.Dir); err != nil {
		return nil, fmt.Errorf("%w (the records were written: a running gateway knows them within %v, not at its next scan; fix %s's permissions before issuing more)",
			err, canaryStatEvery, CanaryGenFile)
	}
	return out, nil
}

// Records returns the stored canary records.
func (c *CanaryStore) Records() ([]CanaryRecord, error) {
	f, err := os.Open(filepath.Join(c.Dir, CanaryFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("scanner: canaries: %w", err)
	}
	defer f.Close()
	var out []CanaryRecord
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r CanaryRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("scanner: %s:%d: %w", CanaryFile, n, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// refresh rereads the file when it changed: a canary issued a moment ago
// is recognised on the next scan. Every scan compares the generation Issue
// changes (canarygen.go), a memory load; the files themselves are looked
// at when the generation changed, at least every canaryStatEvery, and on
// every scan where the generation cannot be mapped.
func (c *CanaryStore) refresh() {
	if c.watch.unchanged() {
		return
	}
	gen := c.watch.follow(c.Dir)
	// The look is made outside the lock, so that concurrent scans do not queue
	// behind each other's system call. The file is reread under the lock, so what
	// it holds is never older than this look.
	st, err := os.Stat(filepath.Join(c.Dir, CanaryFile))
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		if c.byFP == nil {
			c.byFP, c.lengths = map[string]string{}, map[int]bool{}
		}
		if errors.Is(err, fs.ErrNotExist) {
			c.watch.done(gen)
		}
		return
	}
	if c.byFP != nil && st.ModTime().Equal(c.modTime) && st.Size() == c.size {
		c.watch.done(gen)
		return
	}
	recs, err := c.Records()
	if err != nil {
		return // keep what we had, and look again on the next scan
	}
	byFP, lengths := map[string]string{}, map[int]bool{}
	for _, r := range recs {
		byFP[r.Fingerprint] = r.ID
		lengths[r.Length] = true
	}
	c.byFP, c.lengths, c.modTime, c.size = byFP, lengths, st.ModTime(), st.Size()
	c.watch.done(gen)
}

// Canary implements CanarySet, with the records as of the last Lengths.
func (c *CanaryStore) Canary(fp string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.byFP[fp]
	return id, ok
}

// Lengths implements CanarySet; it rereads the file when it changed.
func (c *CanaryStore) Lengths() map[int]bool {
	c.refresh()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lengths
}

const (
	base32Upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	base62      = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	base64Chars = base62 + "+/"
)

func randomString(alphabet string, n int) string {
	b := make([]byte, n)
	max := big.NewInt(int64(len(alphabet)))
	for i := range b {
		v, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic("scanner: no randomness: " + err.Error())
		}
		b[i] = alphabet[v.Int64()]
	}
	return string(b)
}

// githubToken builds prefix + 30 random base62 characters + their CRC32 in
// 6 base62 digits, the layout of GitHub's tokens.
func githubToken(prefix string) string {
	body := randomString(base62, 30)
	sum := crc32.ChecksumIEEE([]byte(body))
	var cs [6]byte
	for i := 5; i >= 0; i-- {
		cs[i] = base62[sum%62]
		sum /= 62
	}
	return prefix + body + string(cs[:])
}

// canaries looks for canary values: every token of a canary's length in
// every segment (all layers), and every secret found, is fingerprinted.
// lengths are the scan's s.Canaries.Lengths().
func (s *Scanner) canaries(segs []*segment, found []Finding, lengths map[int]bool) []Finding {
	if s.Canaries == nil || len(lengths) == 0 {
		return nil
	}
	var out []Finding
	seen := map[string]bool{}
	check := func(g *segment, tok string) {
		fp := fingerprint(s.Key, tok)
		if seen[fp+g.where] {
			return
		}
		if id, ok := s.Canaries.Canary(fp); ok {
			seen[fp+g.where] = true
			out = append(out, Finding{Kind: KindCanary, Rule: RuleCanary + ":" + id, Where: g.where, Decoding: g.decoding(),
				Snippet: snippet(g.text, tok), Fingerprint: fp, secret: secretText(tok), header: g.header})
		}
	}
	eachCandidate(segs, found, lengths, check)
	return out
}

// eachCandidate calls check with every token that may be a known value (a canary, a
// phantom) of one of lengths, with the segment it stands in: every run of word-dash
// and of standard base64 characters in every segment (all layers), then every secret
// already found.
func eachCandidate(segs []*segment, found []Finding, lengths map[int]bool, check func(g *segment, tok string)) {
	for _, g := range segs {
		for _, set := range []func(byte) bool{isWordDash, isB64Std} {
			t := g.text
			for i := 0; i < len(t); {
				if !set(t[i]) {
					i++
					continue
				}
				j := i
				for j < len(t) && set(t[j]) {
					j++
				}
				if lengths[j-i] {
					check(g, t[i:j])
				}
				i = j
			}
		}
	}
	for _, f := range found {
		if f.secret != "" && lengths[len(f.secret)] {
			g := &segment{where: f.Where, chain: strings.Split(f.Decoding, " > "), text: string(f.secret), header: f.header}
			if f.Decoding == "" {
				g.chain = nil
			}
			check(g, string(f.secret))
		}
	}
}

func isWordDash(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func isB64Std(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/'
}
