//go:build tools

// Package tools pins step-ca: `go build github.com/smallstep/certificates/cmd/step-ca`
// in this directory builds the version in go.mod.
package tools

import _ "github.com/smallstep/certificates/cmd/step-ca"
