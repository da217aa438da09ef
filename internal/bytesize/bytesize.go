// Package bytesize writes byte counts as people read them in errors and bounds.
package bytesize

import "fmt"

// Format writes n in the largest binary unit it reaches: "20 GiB", "1.5 MiB", "512 bytes".
// A whole number of the unit has no decimals, so that a bound reads as it was set.
func Format(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size {
			if n%u.size == 0 {
				return fmt.Sprintf("%d %s", n/u.size, u.name)
			}
			return fmt.Sprintf("%.1f %s", float64(n)/float64(u.size), u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
