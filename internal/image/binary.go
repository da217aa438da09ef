package image

import (
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	pathpkg "path"
	"time"
)

// MaxBinarySize bounds the executable put into the image: flotilla is tens of MiB, and a file
// far larger is not the binary the caller meant.
const MaxBinarySize = 512 << 20

// Binary is the flotilla executable an image is built from, with what its Go build stamp
// says about it.
type Binary struct {
	Path string
	// Program is the name of its main package ("flotilla", "flotilla-agent"): the image holds
	// it as /Program, its entrypoint. Empty: "flotilla".
	Program string
	// Arch is the GOARCH it was built for (the image's platform is linux/Arch).
	Arch string
	// Revision and Time are the commit it was built from and that commit's time (the VCS
	// stamp `go build` records inside a Git checkout); Time is the image's creation time,
	// so that two builds of one commit give the same image.
	Revision string
	Time     time.Time
	// Modified says the checkout had uncommitted changes: the image is then not reproducible
	// from Revision alone.
	Modified bool
}

// Inspect reads the executable at path and refuses what would not run as the only program of
// an image with no shell and no C library: anything but a statically linked Linux Go
// executable with a VCS stamp.
func Inspect(path string) (Binary, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Binary{}, fmt.Errorf("binary %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return Binary{}, fmt.Errorf("binary %s: not a regular file", path)
	}
	if st.Size() > MaxBinarySize {
		return Binary{}, fmt.Errorf("binary %s: %d bytes, more than the %d an image takes", path, st.Size(), MaxBinarySize)
	}
	if err := checkStatic(path); err != nil {
		return Binary{}, fmt.Errorf("binary %s: %w", path, err)
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return Binary{}, fmt.Errorf("binary %s: no Go build information: %w", path, err)
	}
	b := Binary{Path: path, Program: pathpkg.Base(bi.Path)}
	var goos, vcsTime string
	for _, s := range bi.Settings {
		switch s.Key {
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			b.Arch = s.Value
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			vcsTime = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	if goos != "linux" || b.Arch == "" {
		return Binary{}, fmt.Errorf("binary %s: built for %s/%s, want linux", path, goos, b.Arch)
	}
	if b.Revision == "" || vcsTime == "" {
		return Binary{}, fmt.Errorf("binary %s: no VCS revision stamped: build it inside the Git checkout (make image), not with -buildvcs=false", path)
	}
	if b.Time, err = time.Parse(time.RFC3339, vcsTime); err != nil {
		return Binary{}, fmt.Errorf("binary %s: VCS time %q: %w", path, vcsTime, err)
	}
	b.Time = b.Time.UTC()
	return b, nil
}

// checkStatic refuses a non-ELF file and a dynamically linked executable: the image has no
// loader and no shared libraries, so such a binary would fail with a bare "no such file".
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("not a Linux executable: %w", err)
	}
	defer func() { _ = f.Close() }() // read only: Close has nothing to flush
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (it names a program interpreter): build it with CGO_ENABLED=0")
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("read its dynamic section: %w", err)
	}
	if len(libs) > 0 {
		return fmt.Errorf("dynamically linked against %v: build it with CGO_ENABLED=0", libs)
	}
	return nil
}
