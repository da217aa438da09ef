package artifact

import (
	"fmt"
	"path"
	"strings"
)

// CheckSymlink reports whether a symlink at name (a slash-separated path
// relative to the tree root, without "." or ".." components) with the given
// target is allowed in an artifact.
//
// The target must be relative, and its ".." components may only come first:
// "../../lib/x" is allowed when the link is at least two directories deep,
// "a/../../x" is not. Checking the text alone is not enough in general,
// because ".." after a component that is itself a symlink climbs from the
// symlink's target, not from its parent. With ".." only as a prefix, the
// link's own directory (a real directory: nothing is ever created below a
// symlink) is the starting point, the climb stays inside the tree, and every
// component after it descends, possibly through other symlinks that obey the
// same rule. By induction, no chain of such links leaves the tree.
func CheckSymlink(name, target string) error {
	if target == "" {
		return fmt.Errorf("symlink '%s': empty target", name)
	}
	if strings.HasPrefix(target, "/") {
		return fmt.Errorf("symlink '%s' -> '%s': absolute target", name, target)
	}
	if strings.ContainsAny(target, "\\\x00") {
		return fmt.Errorf("symlink '%s' -> '%s': backslash or NUL in target", name, target)
	}
	depth := 0
	if dir := path.Dir(name); dir != "." {
		depth = strings.Count(dir, "/") + 1
	}
	ups, descended := 0, false
	for _, c := range strings.Split(target, "/") {
		switch c {
		case "", ".":
		case "..":
			if descended {
				return fmt.Errorf("symlink '%s' -> '%s': '..' after a path component", name, target)
			}
			ups++
			if ups > depth {
				return fmt.Errorf("symlink '%s' -> '%s': points outside the tree", name, target)
			}
		default:
			descended = true
		}
	}
	return nil
}
