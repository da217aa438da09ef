package procstat

import (
	"os"
	"syscall"
	"testing"
	"time"
)

func TestOwnProcess(t *testing.T) {
	t.Parallel()
	pid := os.Getpid()
	rss, err := Bytes(pid, Resident)
	if err != nil {
		t.Fatal(err)
	}
	peak, err := Bytes(pid, Peak)
	if err != nil {
		t.Fatal(err)
	}
	if rss <= 0 || peak < rss {
		t.Errorf("resident %d, peak %d: want 0 < resident <= peak", rss, peak)
	}
	if _, err := Bytes(pid, "NoSuchField"); err == nil {
		t.Error("an unknown field gave no error")
	}
	// Spend CPU until the kernel's own count for this process (getrusage) has passed a few
	// clock ticks, then check that /proc agrees with it. A fixed loop was not enough: on a
	// fast machine it finished inside one tick and the count read zero.
	want := spendCPU(t, 50*time.Millisecond)
	cpu, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	if cpu < want-2*time.Second/clockTicks {
		t.Errorf("CPU = %v; getrusage said at least %v", cpu, want)
	}
	if _, err := Bytes(1<<30, Resident); err == nil {
		t.Error("a missing process gave no error")
	}
}

// spendCPU burns CPU until getrusage reports at least d for this process, and returns what it
// reported.
func spendCPU(t *testing.T, d time.Duration) time.Duration {
	t.Helper()
	x := 0
	for {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		used := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		if used >= d {
			_ = x
			return used
		}
		for i := range 1_000_000 {
			x += i
		}
	}
}
