package procstat

import (
	"os"
	"testing"
)

func TestOwnProcess(t *testing.T) {
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
	x := 0
	for i := range 50_000_000 { // spend some CPU, so the count is above zero
		x += i
	}
	_ = x
	if cpu, err := CPU(pid); err != nil || cpu <= 0 {
		t.Errorf("CPU = %v, %v; want > 0", cpu, err)
	}
	if _, err := Bytes(1<<30, Resident); err == nil {
		t.Error("a missing process gave no error")
	}
}
