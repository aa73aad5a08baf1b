package config

import (
	"reflect"
	"slices"
	"strings"
)

// RestartOnly names the settings that differ between c, the config in force, and next
// but that a reload does not apply: the listeners, the CA settings, the bound on the
// bytes held for scanning, the store, the gateway's limits, HTTP/2 and TLS settings
// (read by its servers and listeners as they start) and the resolver's settings. Upstream,
// scanning (the body limit included), dns.sources and the tenants apply live. A nil c
// names nothing.
func (c *Config) RestartOnly(next *Config) []string {
	if c == nil || next == nil {
		return nil
	}
	var changed []string
	if c.Listen != next.Listen {
		changed = append(changed, "listen")
	}
	if c.CA != next.CA {
		changed = append(changed, "ca")
	}
	// The gateway's bound on the bytes held for scanning is a semaphore sized once.
	if c.Scanning.MaxInflightBytes != next.Scanning.MaxInflightBytes {
		changed = append(changed, "scanning.max_inflight_bytes")
	}
	changed = append(changed, changedKeys("store", c.Store, next.Store)...)
	changed = append(changed, changedKeys("limits", c.Limits, next.Limits)...)
	changed = append(changed, changedKeys("http2", c.HTTP2, next.HTTP2)...)
	changed = append(changed, changedKeys("tls", c.TLS, next.TLS)...)
	// The resolver is built once; only the sources table is refilled.
	changed = append(changed, changedKeys("dns", c.DNS, next.DNS, "sources")...)
	return changed
}

// changedKeys names the fields of two structs that differ, by their YAML keys under
// prefix, leaving out the keys in live (those a reload applies).
func changedKeys[T any](prefix string, a, b T, live ...string) []string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var keys []string
	for i := range va.NumField() {
		name, _, _ := strings.Cut(va.Type().Field(i).Tag.Get("yaml"), ",")
		if !slices.Contains(live, name) && !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			keys = append(keys, prefix+"."+name)
		}
	}
	return keys
}
