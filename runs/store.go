package runs

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrInvalid marks a request the caller must fix (the API answers 400).
var ErrInvalid = errors.New("invalid request")

// Store keeps the service's records: runs (their tokens' hashes only), access
// requests and the audit log. The store package's records have the same
// fields as the types below, so an adapter converts them one to one.
type Store interface {
	// NewRunID returns a new run id for a run created at now.
	NewRunID(now time.Time) string
	CreateRun(ctx context.Context, r Run) (Run, error)
	// EndRun records a run's end (zero at: now); an unknown id is an error
	// that the API shows as not found.
	EndRun(ctx context.Context, id string, at time.Time) (Run, error)
	// ActiveRuns lists the runs that have neither ended nor expired.
	ActiveRuns(ctx context.Context) ([]Run, error)
	// GetRun returns one run, and RunByTokenHash the run whose token's
	// hash has that hex (replicas learn of each other's runs with them).
	GetRun(ctx context.Context, id string) (Run, error)
	RunByTokenHash(ctx context.Context, hash string) (Run, error)
	AppendAudit(ctx context.Context, e AuditEntry) (int64, error)
	// ExpireAccessRequests marks the requests whose expiry has passed.
	ExpireAccessRequests(ctx context.Context, now time.Time) (int64, error)
	// ActiveGrants lists the approved requests that have not expired.
	ActiveGrants(ctx context.Context, now time.Time) ([]AccessRequest, error)
	// CreateAccessRequest stores a new pending request.
	CreateAccessRequest(ctx context.Context, x AccessRequest) (AccessRequest, error)
	// DecideAccessRequest records a decision on a pending request (and its
	// audit entry, in the same transaction).
	DecideAccessRequest(ctx context.Context, id string, d AccessDecision) (AccessRequest, error)
}

// Run is one sandbox launch: its tenant and class, the hash of its token
// (never the token), and what it may reach beyond its class.
type Run struct {
	ID     string
	Tenant string
	Class  string
	// TokenHash is the hex of the run token's hash.
	TokenHash string
	Created   time.Time
	Expires   time.Time // zero: no expiry
	Ended     time.Time // zero: still running
	// RepoRemote is the repository the run works on, without credentials.
	RepoRemote string
	// Manifests records the manifest paths and what they derived (see
	// record); Extra the run's own allow entries. Both are JSON.
	Manifests json.RawMessage
	Extra     json.RawMessage
}

// AccessRequest is a tenant's request to reach a host its policy does not
// allow, and the security team's decision on it.
type AccessRequest struct {
	ID      string
	Tenant  string
	Host    string
	Ports   []int    // empty: the policy's default ports
	Methods []string // empty: any
	Paths   []string // empty: any
	// Justification is the tenant's reason for asking.
	Justification string
	// ExpiresAt ends the access (and a request still pending then).
	ExpiresAt time.Time
	// State is pending, approved, denied or expired.
	State     string
	Reviewer  string
	Reason    string // the reviewer's reason
	CreatedAt time.Time
	DecidedAt time.Time
}

// AccessDecision is the security team's answer to a pending request.
type AccessDecision struct {
	Approve  bool
	Reviewer string // required
	Reason   string
}

// AuditEntry is one line of the audit log: who did what to what.
type AuditEntry struct {
	ID     int64
	Time   time.Time // zero: now
	Actor  string
	Action string
	Tenant string
	Target string // the id of what was acted on
	Detail string
}
