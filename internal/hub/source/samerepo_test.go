package source

import "testing"

func TestSameRepository(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want bool
	}{
		{"https://git.example.com/platform/fleet.git", "https://git.example.com/platform/fleet", true},
		{"https://Git.Example.com/platform/fleet/", "https://git.example.com/platform/fleet.git", true},
		{"https://user:secret@git.example.com/platform/fleet.git", "https://git.example.com/platform/fleet.git", true},
		{"/srv/git/fleet", "file:///srv/git/fleet/", true},
		{"file:///srv/git/./fleet", "file:///srv/git/fleet", true},
		{"https://git.example.com/platform/fleet.git", "https://git.example.com/platform/apps.git", false},
		{"https://git.example.com/platform/fleet.git", "ssh://git.example.com/platform/fleet.git", false},
		{"", "", false},
	}
	for _, tt := range tests {
		if got := SameRepository(tt.a, tt.b); got != tt.want {
			t.Errorf("SameRepository(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
