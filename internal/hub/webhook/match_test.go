package webhook

import "testing"

func TestKey(t *testing.T) {
	t.Parallel()
	tests := []struct{ a, b string }{
		{"https://github.com/Codertocat/platform.git", "https://github.com/codertocat/platform"},
		{"https://github.com/Codertocat/platform.git", "git@github.com:Codertocat/platform.git"},
		{"https://github.com/Codertocat/platform.git", "ssh://git@github.com/Codertocat/platform.git"},
		{"https://github.com/Codertocat/platform.git", "ssh://git@github.com:22/Codertocat/platform.git"},
		{"https://github.com/Codertocat/platform.git", "git://github.com/Codertocat/platform.git"},
		{"https://github.com/Codertocat/platform.git", "https://x-access-token:ghs_secret@GitHub.com/Codertocat/platform/"},
		{"https://github.com/Codertocat/platform.git", "https://github.com:443/Codertocat/platform"},
		{"http://example.com/mike/diaspora.git", "http://EXAMPLE.com:80/mike/diaspora/"},
		{"https://git.example.com:8443/a/b.git", "https://git.example.com:8443/a/b"},
		{"file:///srv/git/platform.git", "/srv/git/platform"},
		{"file:///srv/git/./platform", "/srv/git/platform/"},
	}
	for _, tt := range tests {
		if Key(tt.a) != Key(tt.b) {
			t.Errorf("Key(%q) = %q and Key(%q) = %q: want one repository", tt.a, Key(tt.a), tt.b, Key(tt.b))
		}
	}
	different := []struct{ a, b string }{
		{"https://github.com/Codertocat/platform.git", "https://github.com/Codertocat/platform-old.git"},
		{"https://github.com/Codertocat/platform.git", "https://gitlab.com/Codertocat/platform.git"},
		{"https://git.example.com:8443/a/b.git", "https://git.example.com/a/b.git"},
		{"https://github.com/a/b.git", "https://github.com/a/b/c.git"},
		{"/srv/git/platform", "/srv/git/platform2"},
	}
	for _, tt := range different {
		if Key(tt.a) == Key(tt.b) {
			t.Errorf("Key(%q) = Key(%q) = %q: want two repositories", tt.a, tt.b, Key(tt.a))
		}
	}
	if SameRepository("", "") {
		t.Error(`SameRepository("", "") = true`)
	}
}

func TestFollows(t *testing.T) {
	t.Parallel()
	type src struct{ branch, tag, semver, commit string }
	tests := []struct {
		name string
		ref  string
		src  src
		want bool
	}{
		{"branch push, same branch", "refs/heads/main", src{branch: "main"}, true},
		{"branch push, other branch", "refs/heads/dev", src{branch: "main"}, false},
		{"branch push, source follows HEAD", "refs/heads/dev", src{}, true},
		{"branch push, tag source", "refs/heads/main", src{tag: "v1"}, false},
		{"branch push, semver source", "refs/heads/main", src{semver: "^1"}, false},
		{"branch push, pinned commit", "refs/heads/main", src{branch: "main", commit: "abc"}, false},
		{"tag push, same tag", "refs/tags/v1", src{tag: "v1"}, true},
		{"tag push, other tag", "refs/tags/v2", src{tag: "v1"}, false},
		{"tag push, semver source", "refs/tags/v1.4.0", src{semver: "^1"}, true},
		{"tag push, branch source", "refs/tags/v1", src{branch: "main"}, false},
		{"tag push, source follows HEAD", "refs/tags/v1", src{}, false},
		{"no ref, branch source", "", src{branch: "main"}, true},
		{"no ref, pinned commit", "", src{commit: "abc"}, false},
		{"unknown ref", "refs/notes/x", src{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Follows(tt.ref, tt.src.branch, tt.src.tag, tt.src.semver, tt.src.commit); got != tt.want {
				t.Errorf("Follows(%q, %+v) = %v, want %v", tt.ref, tt.src, got, tt.want)
			}
		})
	}
	ev := Event{Branch: "main"}
	if ev.Ref() != "refs/heads/main" || (Event{Tag: "v1"}).Ref() != "refs/tags/v1" || (Event{}).Ref() != "" {
		t.Errorf("Ref: %q %q %q", ev.Ref(), Event{Tag: "v1"}.Ref(), Event{}.Ref())
	}
}
