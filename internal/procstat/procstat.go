// Package procstat reads a process's memory and CPU figures from Linux's /proc, for the
// benchmarks, the fleet simulator and the local clusters that report them.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Memory fields of /proc/PID/status.
const (
	Resident = "VmRSS" // resident set size now
	Peak     = "VmHWM" // peak resident set size ("high water mark")
)

// Bytes reads a kB field of /proc/PID/status (Resident, Peak, or another Vm* field), in bytes.
func Bytes(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status: %s: %w", pid, field, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

// ResetPeak makes Peak start again from the current resident size, so that each measured
// phase's peak is its own.
func ResetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// clockTicks is USER_HZ, fixed at 100 on Linux.
const clockTicks = 100

// CPU is a process's CPU time so far, user and system, its waited-for children (a hub's git,
// say) included.
func CPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after it are space-separated.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	var ticks int64
	for _, idx := range []int{11, 12, 13, 14} { // utime stime cutime cstime (fields 14-17)
		v, err := strconv.ParseInt(f[idx], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
