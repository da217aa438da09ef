package source

import (
	"fmt"

	"github.com/flotilla/flotilla/internal/artifact"
	"github.com/flotilla/flotilla/internal/bytesize"
)

// Why a checkout is bounded: a tenant's commit is hostile input. A 20 GiB
// file of zeros is a few MiB in a Git pack, so fetching it is cheap, but
// writing it out would fill the hub's disk for every team. A checkout is
// bounded the way an agent's unpacking is (artifact.Limits, with the same
// defaults): nothing over them could be delivered to an agent anyway.

// BoundError reports a checkout refused because the tree at a revision is over one of the
// Poller's Limits. Nothing of the tree is left on disk.
type BoundError struct {
	Source   string // the source's name
	Revision string // the commit, abbreviated
	File     string // the entry being written when the bound was hit
	Bound    string // "file", "total" or "entries"
	Size     int64  // the file's size (file), the total so far (total), the entries so far (entries)
	Max      int64
}

func (e *BoundError) Error() string {
	at := fmt.Sprintf("source '%s' at %s", e.Source, e.Revision)
	switch e.Bound {
	case "file":
		return fmt.Sprintf("%s: file '%s' is %s, over the %s file bound", at, e.File, bytesize.Format(e.Size), bytesize.Format(e.Max))
	case "total":
		return fmt.Sprintf("%s: files add up to %s with '%s', over the %s total bound", at, bytesize.Format(e.Size), e.File, bytesize.Format(e.Max))
	default:
		return fmt.Sprintf("%s: more than %d entries (files, directories, symlinks) at '%s', over the %d entries bound", at, e.Max, e.File, e.Max)
	}
}

// budget counts what a checkout has written against its limits.
type budget struct {
	lim      artifact.Limits
	source   string
	revision string
	entries  int
	bytes    int64
}

// entry counts one more entry (name is its path in the tree) before it is written.
func (b *budget) entry(name string) error {
	b.entries++
	if b.entries > b.lim.MaxFiles {
		return &BoundError{Source: b.source, Revision: b.revision, File: name, Bound: "entries", Size: int64(b.entries), Max: int64(b.lim.MaxFiles)}
	}
	return nil
}

// file counts a file of size bytes, from its Git object header, before any of it is written.
func (b *budget) file(name string, size int64) error {
	if size > b.lim.MaxFileBytes {
		return &BoundError{Source: b.source, Revision: b.revision, File: name, Bound: "file", Size: size, Max: b.lim.MaxFileBytes}
	}
	b.bytes += size
	if b.bytes > b.lim.MaxBytes {
		return &BoundError{Source: b.source, Revision: b.revision, File: name, Bound: "total", Size: b.bytes, Max: b.lim.MaxBytes}
	}
	return nil
}
