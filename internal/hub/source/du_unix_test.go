//go:build unix

package source

import (
	"io/fs"
	"syscall"
)

// diskUsage is the space fi takes on disk: its allocated blocks.
func diskUsage(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
