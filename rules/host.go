package rules

import "github.com/sluice-egress/sluice/rules/match"

// ErrBadHost is wrapped by every error of NormalizeHost and of host pattern parsing.
var ErrBadHost = match.ErrBadHost

// NormalizeHost returns the one spelling of h that policy matching compares: see
// match.NormalizeHost, which it is.
func NormalizeHost(h string) (string, error) { return match.NormalizeHost(h) }
