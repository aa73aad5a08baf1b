package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat: USER_HZ, 100 on every Linux
// architecture Go supports (the kernel's own HZ may differ; the ABI does not).
const userHZ = 100

// procCPU returns the CPU time, user and system, that pid, its reaped children and its
// live descendants (squid's certificate helpers) have used so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: CPU time of process %d: %w", pid, err)
	}
	// The command name, in parentheses, may hold spaces: the fields start after it.
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0, fmt.Errorf("bench: /proc/%d/stat: %d fields", pid, len(f))
	}
	// f[0] is field 3 (state): utime, stime, cutime and cstime are fields 14 to 17.
	var ticks int64
	for _, s := range f[11:15] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	total := time.Duration(ticks) * time.Second / userHZ
	for _, c := range children(pid) {
		if d, err := procCPU(c); err == nil {
			total += d
		}
	}
	return total, nil
}

// children lists pid's child processes (of every thread); none where the kernel does not say.
func children(pid int) []int {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var out []int
	for _, t := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// procRSS returns pid's resident set size in bytes (VmRSS), its helpers left out.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("bench: memory of process %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("bench: /proc/%d/status VmRSS %q: %w", pid, v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("bench: /proc/%d/status has no VmRSS", pid)
}
