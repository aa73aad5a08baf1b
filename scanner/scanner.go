// Package scanner finds secrets, canary tokens and exfiltration links in what
// a request carries (URL, headers, decoded body) and reports them as findings.
package scanner

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Defaults for a zero Scanner.
const (
	DefaultMaxBodyBytes = 10 << 20
	DefaultTimeout      = 10 * time.Second
	DefaultDecodeDepth  = 2
)

// MaxFindings caps the findings one scan reports (the verdict still counts
// every one): a body full of candidates must not flood the incident store.
const MaxFindings = 256

// ErrTimeout is returned when a scan did not finish within Scanner.Timeout:
// the caller must not forward what was not checked.
var ErrTimeout = errors.New("scanner: scan deadline exceeded")

// CanarySet recognises canary tokens by keyed fingerprint. *CanaryStore
// implements it.
type CanarySet interface {
	// Canary returns the canary's id when fp is the fingerprint of one.
	Canary(fp string) (id string, ok bool)
	// Lengths are the lengths of the canary values, so that only tokens of
	// those lengths are fingerprinted; empty: there are no canaries. It is
	// called once at the start of each scan, before Canary.
	Lengths() map[int]bool
}

// Scanner inspects requests. Its zero value works: the shipped rules, a
// 10 MiB body limit, two decoding layers, a 10s deadline, a per-process
// fingerprint key and no canaries. Set the fields before the first scan;
// it is safe for concurrent use after that.
type Scanner struct {
	// Rules to match; nil: DefaultRules().
	Rules *Rules
	// Policy turns findings into actions; the zero Policy blocks secrets.
	Policy Policy
	// MaxBodyBytes is the largest body (also after decompression) scanned;
	// zero: DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// DecodeDepth is how many layers of base64, base64url, hex and percent
	// encoding are peeled; zero: DefaultDecodeDepth, negative: none.
	DecodeDepth int
	// Timeout bounds one scan; zero: DefaultTimeout. A scan that runs out of
	// time fails (ErrTimeout), it never passes.
	Timeout time.Duration
	// Key is the HMAC key of fingerprints; nil: a random key per process
	// (fingerprints then do not match across restarts or with canaries).
	Key []byte
	// Canaries recognises canary tokens; nil: none.
	Canaries CanarySet
	// Phantoms recognises phantom credentials (see PhantomSet); nil: none.
	Phantoms PhantomSet
	// CleanCacheEntries bounds how many body texts found clean are
	// remembered, so that a text sent again (a conversation's history, on
	// each turn) is not scanned again (see cleanCache), rounded up to a
	// power of two; zero:
	// DefaultCleanCacheEntries, negative: none are.
	CleanCacheEntries int
	// TrailEntries bounds how many sandboxes × hosts the pieces of recent
	// requests are remembered for, to find a token sent a piece a request
	// (trail.go); zero: DefaultTrailEntries, negative: none are.
	TrailEntries int

	once    sync.Once
	initErr error
	clean   *cleanCache  // nil: off
	trail   *trail       // nil: off
	running atomic.Int32 // scans inspecting now
	// wholeBodies: a JSON body is inspected once it was read, not while
	// (pipeline.go); for the tests that compare the two.
	wholeBodies bool
	earlyJobs   atomic.Uint64 // the pipeline's jobs inspected before their body was all read
}

func (s *Scanner) init() error {
	s.once.Do(func() {
		if s.Rules == nil {
			s.Rules, s.initErr = DefaultRules()
		}
		if s.Key == nil {
			s.Key = randomKey()
		}
		if s.CleanCacheEntries >= 0 {
			s.clean = newCleanCache(cmp.Or(s.CleanCacheEntries, DefaultCleanCacheEntries))
		}
		if s.TrailEntries >= 0 {
			s.trail = newTrail(cmp.Or(s.TrailEntries, DefaultTrailEntries))
		}
	})
	return s.initErr
}

func (s *Scanner) maxBody() int64 {
	if s.MaxBodyBytes > 0 {
		return s.MaxBodyBytes
	}
	return DefaultMaxBodyBytes
}

func (s *Scanner) depth() int {
	switch {
	case s.DecodeDepth < 0:
		return 0
	case s.DecodeDepth == 0:
		return DefaultDecodeDepth
	}
	return s.DecodeDepth
}

func (s *Scanner) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultTimeout
}

// Request is what Scan reads.
type Request struct {
	// Tenant selects the tenant's policy overrides.
	Tenant string
	// Host is the destination (normalised), for bindings.
	Host string
	// URL of the request; its path and query are scanned.
	URL *url.URL
	// Header is scanned value by value; Proxy-Authorization is skipped (it
	// carries the gateway's own credentials and never travels on).
	Header http.Header
	// Body is read up to the limit (plus one byte to notice more); nil: none.
	Body io.Reader
	// Size is the body's length when known (the request's Content-Length):
	// the body is then read into one buffer of that size (at most the limit
	// plus one byte) rather than one that doubles as it fills. 0 or less:
	// unknown, or the length of a Body with a Len method (bytes.Reader).
	Size int64
	// Allowed reports whether the client may reach host; links to hosts it
	// may not reach are exfiltration channels. nil: links are not checked.
	Allowed func(host string) bool
	// PhantomAllowed reports whether the phantom with fingerprint fp, found
	// at where with the decoding chain decoding, sits in its bound place for
	// this request. nil: every phantom found is a misuse.
	PhantomAllowed func(fp, where, decoding string) bool
	// Reserve, when set, takes n more bytes of the memory the caller bounds
	// (the gateway's scan memory) before the scan holds them beyond the
	// body: what a compressed body, compressed runs and archives inflate
	// to, counted a step (64 KiB) ahead. false: none is left, and Scan
	// fails with ErrScanMemory. What it took is the caller's to give back
	// when the request is done. nil: nothing is counted.
	Reserve func(n int64) bool
	// Source names the sandbox that sent the request (its run, or its
	// tenant and class), within Tenant: its requests' pieces to Host are
	// joined across requests (trail.go). "": not followed.
	Source string
}

// Finding is one thing found. It never holds the secret in a form that
// prints: the value is kept only for redaction and bindings.
type Finding struct {
	Kind        string // KindSecret, KindExfilLink, KindCanary, KindOversize
	Rule        string // detection rule id
	Where       string // "url", "header:Authorization", "json:$.messages[3].content", "body", "multipart:file"
	Decoding    string // chain that revealed it, e.g. "gzip > base64"; "" when plain
	Snippet     string // redacted evidence
	Fingerprint string // HMAC-SHA256 of the secret with the installation key (hex, 128 bits)
	Action      Action // decided by the Policy
	Host        string // for exfil links: the foreign host
	Line        int    // 1-based line within the scanned text, for files; 0 when unknown

	secret secretText
	header string // canonical header name when Where is a header
	basic  bool   // the secret is the password of Basic credentials in header
}

// String describes the finding without its secret.
func (f Finding) String() string {
	return fmt.Sprintf("%s %s at %s decoding=%q action=%s snippet=%q fingerprint=%s", f.Kind, f.Rule, f.Where, f.Decoding, f.Action, f.Snippet, f.Fingerprint)
}

// Format prints String for every verb: fmt would print the unexported
// secret field of a struct verbatim.
func (f Finding) Format(s fmt.State, _ rune) { io.WriteString(s, f.String()) }

// secretText hides a secret from every fmt verb.
type secretText string

func (secretText) Format(f fmt.State, _ rune) { io.WriteString(f, "[REDACTED]") }
func (secretText) GoString() string           { return "[REDACTED]" }
func (secretText) String() string             { return "[REDACTED]" }

// Result is the outcome of a scan.
type Result struct {
	// Findings with their actions; bound credentials at their own
	// destination are not findings.
	Findings []Finding
	// Verdict is the strongest action among the findings (Pass when none).
	Verdict Action
	// Reason for a Block: one of the Reason constants (KindReason).
	Reason string
	// Body is what to forward in place of the request body (the bytes read,
	// redacted for Redact, followed by the unread rest of an oversize body
	// that the policy forwards); nil when the request had none.
	Body io.Reader
	// BodyLen is Body's length, -1 when unknown.
	BodyLen int64
	// URL and Header are the redacted URL and headers for Redact; nil: unchanged.
	URL    *url.URL
	Header http.Header
	// Path is the request path safe to record: secrets found in the URL are
	// masked, or the whole path replaced when they were encoded there;
	// those the policy lets pass too, since the record (an incident, an
	// observation of what a run reached) is kept where they do not belong.
	Path string
}

// Scan reads the request's URL, headers and body (up to the limit) and
// returns the findings and what to forward. An error means the request was
// not fully checked: fail closed.
func (s *Scanner) Scan(ctx context.Context, req *Request) (*Result, error) {
	if err := s.init(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	return s.scan(ctx, req, true)
}

func (s *Scanner) scan(ctx context.Context, req *Request, redact bool) (_ *Result, err error) {
	res := &Result{BodyLen: -1}
	var segs []*segment
	var extra []Finding
	if req.URL != nil {
		segs = append(segs, urlSegments(req.URL)...)
		extra = append(extra, urlEntropy(req.URL)...)
	}
	names := sortedKeys(req.Header)
	segs = append(segs, headerSegments(req.Header, names)...)
	segs = append(segs, s.fieldJoins(req.URL, req.Header, names)...)

	var raw []byte
	var encodings []string
	var plain []byte
	bm := newMeter(req.Reserve) // what the body decompresses to
	streamed := false           // the body was segmented as it was decompressed: plain is not kept
	ar := scanArenas.Get().(*scanArena)
	var pooled *bodyBuf // raw's buffer while it may go back to its pool (bodybuf.go)
	var rawBody *bytes.Reader
	// A JSON body is inspected while it is read (pipeline.go); the
	// pipeline is stopped on every way out that does not finish it.
	var pipe *pipeline
	var tail []*segment // the body's groups the pipeline has not been given
	defer func() {
		if pipe != nil {
			pipe.abandon()
		}
	}()
	if req.Body != nil {
		max := s.maxBody()
		pooled = takeBody(bodyHint(req, max))
		var buf []byte
		var err error
		walked := false // the pipeline's walk read the body as one JSON value
		if pipelined(req) && !s.wholeBodies {
			pipe = s.newPipeline(ctx, req, segs, max)
			buf, tail, walked, err = pipe.read(io.LimitReader(req.Body, max+1), pooled.b, ar)
		} else {
			buf, err = readInto(io.LimitReader(req.Body, max+1), pooled.b)
		}
		if unsafe.SliceData(buf) != unsafe.SliceData(pooled.b) {
			pooled.release() // outgrown: buf is a copy
			pooled = nil
		}
		if err != nil {
			if pooled != nil {
				pooled.release()
			}
			return nil, fmt.Errorf("scanner: read body: %w", err)
		}
		raw = buf
		rawBody = bytes.NewReader(raw)
		res.Body, res.BodyLen = rawBody, int64(len(raw))
		// What forwards the body gives its buffer back (Result.Release); a
		// body that goes nowhere (an error, a redacted copy forwarded
		// instead, the redaction's own check) goes back here. Nothing else
		// refers to the buffer past this scan: the segments go with the
		// arena, and the findings are copied out of it (scanArena.release).
		defer func() {
			switch {
			case pooled == nil:
			case redact && err == nil && res.Body == rawBody:
				pooled.b = raw
				res.Body = newPooledBody(pooled)
			default:
				pooled.release()
			}
		}()
		if int64(len(raw)) > max || !walked {
			if pipe != nil {
				pipe.abandon() // inspected again, as it came or as a whole
				pipe = nil
			}
		}
		if pipe != nil {
			plain = raw
		} else if int64(len(raw)) > max {
			// What was read is scanned as it came (a compressed body is not
			// decoded in part): only the tail beyond it goes on unchecked, when
			// the policy forwards oversize bodies at all.
			// A compressed head is decoded as far as it goes, so that its
			// secrets are found as in a body that fits.
			snippet := fmt.Sprintf("body larger than %d bytes: the first %d were scanned, the rest is unchecked", max, max)
			head, headEnc := raw[:max], []string(nil)
			if enc := contentEncodings(req.Header); len(enc) > 0 {
				if p, ok := decompressPrefix(head, enc, max, bm); ok {
					head, headEnc = p, enc
					snippet = fmt.Sprintf("body larger than %d bytes: the first %d (%s, decoded as far as they go) were scanned, the rest is unchecked",
						max, max, strings.Join(enc, " > "))
				}
				if bm.exhausted() {
					return nil, ErrScanMemory
				}
			}
			extra = append(extra, Finding{Kind: KindOversize, Rule: RuleOversize, Where: "body", Snippet: snippet})
			segs = append(segs, bodySegments(head, req.Header.Get("Content-Type"), headEnc, ar)...)
			segs = append(segs, s.formJoins(head, req.Header.Get("Content-Type"), headEnc)...)
			res.Body, res.BodyLen = io.MultiReader(bytes.NewReader(raw), req.Body), -1
			raw, pooled = nil, nil // raw is read on: the collector takes its buffer
		} else {
			encodings = contentEncodings(req.Header)
			ct := req.Header.Get("Content-Type")
			walked, err := streamJSON(raw, ct, encodings, max, ar, bm)
			p := raw
			if walked == nil && err == nil {
				p, err = decompress(raw, encodings, max, bm)
			}
			switch {
			case errors.Is(err, ErrScanMemory):
				return nil, ErrScanMemory
			case errors.Is(err, errTooLarge):
				extra = append(extra, Finding{Kind: KindOversize, Rule: RuleDecompressed, Where: "body",
					Decoding: strings.Join(encodings, " > "),
					Snippet:  fmt.Sprintf("decompresses to more than %d bytes", max)})
			case err != nil:
				return nil, fmt.Errorf("scanner: body: %w", err)
			case walked != nil:
				streamed = true
				segs = append(segs, walked...)
			default:
				plain = p
				body := bodySegments(plain, ct, encodings, ar)
				segs = append(segs, body...)
				segs = append(segs, s.formJoins(plain, ct, encodings)...)
				segs = append(segs, s.partJoins(body)...)
			}
		}
	}
	var tr *trailed
	if s.trail != nil && req.Source != "" && redact {
		tr = s.trailJoins(req, raw)
		defer func() {
			if err != nil || res.Verdict == Block {
				s.trail.forget(tr.key, tr.added)
			}
		}()
	}
	var found []Finding
	if pipe != nil {
		found, err = pipe.finish(tail)
		pipe = nil
	} else {
		found, err = s.inspect(ctx, req, segs)
	}
	ar.release(found)
	if err != nil {
		return nil, err
	}
	found = append(found, extra...)
	if tr != nil && len(tr.segs) > 0 {
		across, err := s.inspectTrail(ctx, req, tr)
		if err != nil {
			return nil, err
		}
		found = append(found, across...)
	}
	found = dropCovered(found)
	s.decide(req.Tenant, req.Host, found, res)
	if req.URL != nil {
		res.Path = safePath(req.URL.Path, found)
	}
	if res.Verdict == Redact && redact {
		if streamed {
			if plain, err = decompress(raw, encodings, s.maxBody(), bm); err != nil {
				return nil, fmt.Errorf("scanner: body: %w", err)
			}
		}
		if err := s.redact(ctx, req, plain, encodings, res); err != nil {
			// What could not be redacted is not forwarded.
			for i := range res.Findings {
				if res.Findings[i].Action == Redact {
					res.Findings[i].Action = Block
				}
			}
			res.Verdict = Block
			res.Reason = reasonFor(res.Findings)
		}
	}
	return res, nil
}

// bodyHint is the buffer size to read req's body into: its known length
// and one byte to see the end, or readAllHint's default when unknown.
func bodyHint(req *Request, max int64) int {
	n := req.Size
	if l, ok := req.Body.(interface{ Len() int }); ok && n <= 0 {
		n = int64(l.Len())
	}
	if n <= 0 {
		return 0
	}
	return int(min(n, max) + 1)
}

// inspect peels each segment's layers and runs every detector over the
// segment and its layers together, one segment at a time: the decoded
// layers of one segment are garbage before the next is decoded, so that
// memory stays near the body's size however many layers it has. req may
// be nil (ScanText): links and phantom places are not checked then.
//
// A detector of its own kind plugs in here: it gets one segment with its
// layers (segs) and what the rules found in them (found).
func (s *Scanner) inspect(ctx context.Context, req *Request, top []*segment) ([]Finding, error) {
	return s.inspectWith(ctx, req, top, s.newInspectShared(req))
}

// newInspectShared is what the groups of one scan share.
func (s *Scanner) newInspectShared(req *Request) *inspectShared {
	sh := &inspectShared{}
	if s.Canaries != nil {
		sh.canaryLens = s.Canaries.Lengths()
	}
	if s.Phantoms != nil {
		sh.phantomLens = s.Phantoms.Lengths()
	}
	if req != nil {
		sh.clean = s.clean
		sh.meter = newMeter(req.Reserve)
	}
	if sh.clean != nil {
		sh.lens = sh.clean.lensSum(sh.canaryLens, sh.phantomLens)
		sh.tokenLens = sh.canaryLens
		if len(sh.phantomLens) > 0 {
			sh.tokenLens = maps.Clone(sh.phantomLens)
			maps.Copy(sh.tokenLens, sh.canaryLens)
		}
	}
	return sh
}

// inspectWith is inspect with what the groups share. A large body's groups
// are inspected on the cores no other scan is using, as a pipeline's jobs
// (pipeline.go) that idle cores take one after the other: an agent's call
// waits for its scan, and a 1 MiB conversation is thousands of groups that
// need nothing of each other. Spreading them costs CPU (about a fifth more
// for a chat body, measured), so a busy gateway, whose cores all scan
// already, inspects a body on the scan's own goroutine.
func (s *Scanner) inspectWith(ctx context.Context, req *Request, top []*segment, sh *inspectShared) ([]Finding, error) {
	text := 0
	for _, g := range top {
		text += len(g.text)
	}
	batch := pipeJobBytes(s.maxBody())
	if !spreads(int(s.running.Load()), text, batch) {
		s.running.Add(1)
		defer s.running.Add(-1)
		return s.inspectGroups(ctx, req, top, sh)
	}
	p := s.newPipelineWith(ctx, req, sh, nil, batch)
	start, n := 0, 0
	for i, g := range top {
		if n += len(g.text); n >= batch {
			p.add(top[start : i+1])
			start, n = i+1, 0
		}
	}
	return p.finish(top[start:])
}

// spreads reports whether text bytes of groups are worth a pipeline of
// jobs of batch bytes beside running other scans: two jobs at least, and a
// core beside the scan's own that no other scan is using.
func spreads(running, text, batch int) bool {
	return runtime.GOMAXPROCS(0)-running >= 2 && text >= 2*batch
}

// inspectShared is what the groups of one scan share: read once, never
// written while they are inspected.
type inspectShared struct {
	canaryLens, phantomLens map[int]bool // asked once per scan
	clean                   *cleanCache  // nil: off
	lens                    uint64       // clean.lensSum of the lengths
	tokenLens               map[int]bool // canary and phantom lengths together
	inflated                atomic.Int64 // bytes compressed runs inflated to (peel), against the body limit
	unpacked                atomic.Int32 // compressed texts inflated (peel), against maxUnpacks
	meter                   *meter       // what they inflate to, against Request.Reserve
}

// inspectGroups inspects top's groups one after the other.
func (s *Scanner) inspectGroups(ctx context.Context, req *Request, top []*segment, sh *inspectShared) ([]Finding, error) {
	if joined := joinedPieces(top); len(joined) > 0 {
		// Into a new array: top is one job's part of a body's segments,
		// and appending in place would overwrite the next job's.
		top = append(top[:len(top):len(top)], joined...)
	}
	var out []Finding
	det := newDetectRun()
	clean := sh.clean
	mayCache := func(g *segment) bool { return clean != nil && g.body && len(g.text) >= minCleanText }
	var next cleanKey // the next segment's key, when it may be cached
	if len(top) > 0 && mayCache(top[0]) {
		next = clean.key(req.Tenant, req.Host, top[0], sh.lens)
	}
	for i, seg := range top {
		top[i] = nil // the segment's text goes with its group
		key, cacheable := next, mayCache(seg)
		// The next segment's set is fetched from memory while this one is
		// looked up and inspected.
		if i+1 < len(top) && mayCache(top[i+1]) {
			next = clean.key(req.Tenant, req.Host, top[i+1], sh.lens)
			clean.prefetch(next)
		}
		if cacheable {
			if tokens, ok := clean.get(key); ok && s.stillClean(tokens) {
				clean.hits.Add(1)
				continue
			}
		}
		segs, over := s.peel([]*segment{seg}, sh)
		if sh.meter.exhausted() {
			return nil, ErrScanMemory
		}
		found, err := s.match(ctx, segs)
		if err != nil {
			return nil, err
		}
		found = append(found, over...)
		found = append(found, s.detect(det, segs, found)...)
		found = s.withCanaries(segs, found, sh.canaryLens)
		found = s.withPhantoms(req, segs, found, sh.phantomLens)
		if req != nil && req.Allowed != nil {
			allowed := req.Allowed
			if cacheable {
				// A link's verdict is the policy's of the day: not cached.
				allowed = func(host string) bool { cacheable = false; return req.Allowed(host) }
			}
			found = append(found, s.exfil(segs, found, allowed)...)
		}
		if cacheable && len(found) == 0 {
			if tokens, ok := s.cleanTokens(segs, sh.tokenLens); ok {
				clean.add(key, tokens)
			}
		}
		out = append(out, found...)
	}
	return out, nil
}

// withCanaries adds canary findings and drops the secret findings that
// were canaries: a canary is reported once, as a canary.
func (s *Scanner) withCanaries(segs []*segment, found []Finding, lengths map[int]bool) []Finding {
	cs := s.canaries(segs, found, lengths)
	if len(cs) == 0 {
		return found
	}
	fps := map[string]bool{}
	for _, c := range cs {
		fps[c.Fingerprint] = true
	}
	out := found[:0:0]
	for _, f := range found {
		if !fps[fingerprint(s.Key, string(f.secret))] {
			out = append(out, f)
		}
	}
	return append(out, cs...)
}

// decide assigns actions, drops bound credentials and sets the verdict.
func (s *Scanner) decide(tenant, host string, found []Finding, res *Result) {
	isBound := make([]bool, len(found))
	var bound []secretText // joined pieces that hold one of these are bound too
	for i := range found {
		f := &found[i]
		if isBound[i] = s.Policy.bound(tenant, host, f) || f.basic && s.Policy.bound(tenant, host, plainCopy(f)); isBound[i] {
			bound = append(bound, f.secret)
		}
	}
	for i := range found {
		f := &found[i]
		if isBound[i] || joinedField(*f) && slices.ContainsFunc(bound, func(b secretText) bool { return strings.Contains(string(f.secret), string(b)) }) {
			continue
		}
		f.Action = s.Policy.action(tenant, s.Rules.actions, f)
		if f.Action == Pass {
			continue
		}
		res.Findings = append(res.Findings, *f)
		res.Verdict = max(res.Verdict, f.Action)
	}
	// Evidence around one secret must not show another.
	var pairs []string
	seen := map[secretText]bool{}
	for _, f := range res.Findings {
		if f.secret != "" && !seen[f.secret] {
			seen[f.secret] = true
			pairs = append(pairs, string(f.secret), mask(string(f.secret)))
		}
	}
	// A flood of findings is reported in part: the verdict counts them all,
	// and only the reported ones get fingerprints and cleaned snippets
	// (a dense body has tens of thousands of findings).
	if len(res.Findings) > MaxFindings {
		res.Findings = res.Findings[:MaxFindings]
	}
	for i := range res.Findings {
		if f := &res.Findings[i]; f.Fingerprint == "" && f.secret != "" {
			f.Fingerprint = fingerprint(s.Key, string(f.secret))
		}
	}
	if len(pairs) > 2 {
		rep := strings.NewReplacer(pairs...)
		for i := range res.Findings {
			res.Findings[i].Snippet = rep.Replace(res.Findings[i].Snippet)
		}
	}
	// Nor may a location show one (see safeWhere).
	secrets := make([]string, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		secrets = append(secrets, strings.ToLower(pairs[i]))
	}
	slices.SortFunc(secrets, func(a, b string) int { return len(a) - len(b) })
	for i := range res.Findings {
		res.Findings[i].Where = safeWhere(res.Findings[i].Where, secrets)
		res.Findings[i].Snippet = maskPieces(res.Findings[i].Snippet, secrets)
	}
	// An oversize body cannot be redacted: redactions become blocks.
	if res.Verdict == Redact && res.BodyLen < 0 && hasBodyRedaction(res.Findings) {
		res.Verdict = Block
	}
	if res.Verdict == Block {
		res.Reason = reasonFor(res.Findings)
	}
}

func hasBodyRedaction(fs []Finding) bool {
	for _, f := range fs {
		if f.Action == Redact && !strings.HasPrefix(f.Where, "url") && !strings.HasPrefix(f.Where, "header:") {
			return true
		}
	}
	return false
}

// ScanText scans a file's or stdin's content: JSON is walked, anything else
// read as text, layers are peeled. Exfiltration links are not checked
// (ScanTextFor, in files.go, checks them).
func (s *Scanner) ScanText(ctx context.Context, name string, data []byte) ([]Finding, error) {
	return s.ScanTextFor(ctx, name, data, nil)
}

// segment is one piece of text the rules see, with where it came from.
type segment struct {
	where  string
	chain  []string
	text   string
	header string // canonical header name for header segments
	body   bool   // from the body (exfil links are looked for there)
	depth  int    // layers peeled to get here
	line   int    // 1-based line of text's start in the original, 0 unknown
	basic  bool   // the decoded credential of a header's "Basic <base64>"

	// scanFeatures' result on text, once it was read (scanned).
	marks   featureMarks
	scanned bool
}

// features is scanFeatures(g.text), read once for peel and detect.
func (g *segment) features() *featureMarks {
	if !g.scanned {
		g.marks = scanFeatures(g.text)
		g.scanned = true
	}
	return &g.marks
}

func (g *segment) decoding() string { return strings.Join(g.chain, " > ") }
