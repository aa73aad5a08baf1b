package phantom

import "fmt"

// CheckSecrets reads every credential's real secret once, so that one that cannot be
// read is an error when the credentials are loaded (a start-up error, or a reload
// that keeps the previous policy) rather than at the first request.
func CheckSecrets(creds map[string][]*Credential) error {
	for tn, cs := range creds {
		for _, c := range cs {
			if _, err := c.Secret.Secret(); err != nil {
				return fmt.Errorf("tenant %s: credential %s: %w", tn, c.Name, err)
			}
		}
	}
	return nil
}

// MintTenants gives every tenant of creds its tenant-level phantoms (idempotent:
// existing ones are kept), so that exported env files hold them.
func (r *Registry) MintTenants(creds map[string][]*Credential) error {
	for tn := range creds {
		if _, err := r.Mint(tn, ""); err != nil {
			return fmt.Errorf("tenant %s: %w", tn, err)
		}
	}
	return nil
}
