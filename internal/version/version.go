// Package version tells which build of flotilla is running.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is the release this binary was built as. Release builds set it with
// -ldflags "-X github.com/flotilla/flotilla/internal/version.Version=v1.2.3".
var Version = "dev"

// Info describes a build.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the running binary's build information; the commit comes from the VCS stamp
// that `go build` records when it builds inside a Git checkout.
func Get() Info {
	info := Info{Version: Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	return info
}

// String is the one-line form printed by `flotilla version`.
func (i Info) String() string {
	s := "flotilla " + i.Version
	if i.Commit != "" {
		c := i.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		if i.Modified {
			c += "-dirty"
		}
		s += " (" + c + ")"
	}
	return s + " " + i.GoVersion + " " + i.Platform
}
