package plan

import (
	"fmt"
	"strings"
)

// maxDiffCells bounds the table of a line diff (lines before x lines after): beyond it the
// object is shown as replaced whole, which is still correct, only longer.
const maxDiffCells = 4 << 20

// unifiedDiff is the unified diff (3 lines of context) from text x to y, with the file
// names given; "" when they are equal.
func unifiedDiff(x, y, from, to string) string {
	if x == y {
		return ""
	}
	a, b := splitLines(x), splitLines(y)
	ops := lineOps(a, b)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	const ctx = 3
	// Walk the edit script and emit hunks around the changes.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-ctx, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run-end > 2*ctx || run == len(ops) {
				end = min(end+ctx, len(ops))
				break
			}
			end = run
		}
		aStart, bStart, aLen, bLen := ops[start].ai, ops[start].bi, 0, 0
		var body strings.Builder
		for _, o := range ops[start:end] {
			body.WriteByte(o.kind)
			body.WriteString(o.text)
			body.WriteByte('\n')
			if o.kind != '+' {
				aLen++
			}
			if o.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n%s", hunkRange(aStart, aLen), hunkRange(bStart, bLen), body.String())
		i = end
	}
	return out.String()
}

// hunkRange is a unified diff's "start,length", 1-based; an empty range names the line before.
func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// op is one line of an edit script: ' ' kept, '-' removed, '+' added; ai and bi are the
// line's index in a and b (for a kept line, both).
type op struct {
	kind   byte
	text   string
	ai, bi int
}

// lineOps is a shortest edit script from a to b (longest common subsequence).
func lineOps(a, b []string) []op {
	// Common prefix and suffix first: most object changes touch a few lines.
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	var ops []op
	for i := range p {
		ops = append(ops, op{' ', a[i], i, i})
	}
	ma, mb := a[p:len(a)-s], b[p:len(b)-s]
	n, m := len(ma), len(mb)
	if n*m > maxDiffCells {
		for i, l := range ma {
			ops = append(ops, op{'-', l, p + i, p})
		}
		for j, l := range mb {
			ops = append(ops, op{'+', l, p + n, p + j})
		}
	} else {
		// lcs[i][j]: length of the LCS of ma[i:] and mb[j:].
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && ma[i] == mb[j]:
				ops = append(ops, op{' ', ma[i], p + i, p + j})
				i, j = i+1, j+1
			case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, op{'-', ma[i], p + i, p + j})
				i++
			default:
				ops = append(ops, op{'+', mb[j], p + i, p + j})
				j++
			}
		}
	}
	for k := range s {
		ops = append(ops, op{' ', a[len(a)-s+k], len(a) - s + k, len(b) - s + k})
	}
	return ops
}
