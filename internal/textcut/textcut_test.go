package textcut

import "testing"

func TestCutKeepsValidUTF8(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 6, "abc…"},
		{"aéééé", 6, "aé…"}, // the cut would split the second é
		{"bad\xffbyte", 20, "bad\uFFFDbyte"},
	} {
		if got := Cut(tc.in, tc.n); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q; want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
