package gateway

import (
	"net/textproto"
	"testing"
)

// headerOverrides reads the header map directly: a name not in canonical form
// would never be found there, and its override would pass unchecked.
func TestOverrideHeadersAreCanonical(t *testing.T) {
	for _, h := range overrideHeaders {
		if c := textproto.CanonicalMIMEHeaderKey(h); c != h {
			t.Errorf("override header %q is not in canonical form (%q): it would never be found", h, c)
		}
	}
}
