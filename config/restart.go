package config

// RestartOnly names the settings that differ between c, the config in force, and next
// but that a reload does not apply: the listeners, the CA settings and the bound on the
// bytes held for scanning. Upstream, scanning and the tenants apply live. A nil c
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
	// The gateway's bound on the bytes held for scanning is a semaphore sized once;
	// bodies of unknown length reserve the max_body_bytes of start-up from it (the
	// scanner itself applies the new limit).
	if c.Scanning.MaxInflightBytes != next.Scanning.MaxInflightBytes {
		changed = append(changed, "scanning.max_inflight_bytes")
	}
	if c.Scanning.MaxBodyBytes != next.Scanning.MaxBodyBytes && c.Scanning.MaxInflightBytes > 0 {
		changed = append(changed, "scanning.max_body_bytes")
	}
	return changed
}
