package bytesize

import "testing"

func TestFormat(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{
		0: "0 bytes", 512: "512 bytes", 1024: "1 KiB", 1536: "1.5 KiB",
		256 << 20: "256 MiB", 3 << 29: "1.5 GiB", 20 << 30: "20 GiB",
	} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}
