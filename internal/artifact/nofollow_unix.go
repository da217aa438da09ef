//go:build unix

package artifact

import "syscall"

// noFollow makes opening a symlink fail instead of following it.
const noFollow = syscall.O_NOFOLLOW
