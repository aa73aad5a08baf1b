package phantom

import (
	"slices"
	"strings"
)

// MaskEnv hides the values of the env lines ("NAME=value") whose name is in
// names: phantoms are worth nothing outside the gateway, but they stay out
// of logs all the same.
func MaskEnv(lines, names []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l
		if k, _, ok := strings.Cut(l, "="); ok && slices.Contains(names, k) {
			out[i] = k + "=**** (phantom)"
		}
	}
	return out
}
