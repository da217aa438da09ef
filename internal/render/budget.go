package render

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/flotilla/flotilla/internal/bytesize"
)

// Budget bounds one render while it runs: what it may use (memory, CPU time, wall-clock
// time) and what it may produce (objects and bytes of output). A zero field takes the
// corresponding DefaultBudget value. The platform sets the defaults (hub flags); a Project may
// lower them and a Release may ask for more up to its Project's maximum, and the hub sends the
// budget in force with each assignment.
type Budget struct {
	// MemoryBytes bounds the render's memory (heap and everything else the process holds).
	MemoryBytes int64
	// CPUTime bounds the CPU time the render may use.
	CPUTime time.Duration
	// WallTime bounds the render's wall-clock time, from start to the last object written.
	WallTime time.Duration
	// Objects bounds the number of rendered objects.
	Objects int
	// OutputBytes bounds the rendered objects' size, as JSON.
	OutputBytes int64
}

// DefaultBudget is the budget of a render that names none: far above real releases (the
// largest public charts render a few MiB, a few thousand objects, in well under a second) and
// far below what would hurt an agent.
var DefaultBudget = Budget{
	MemoryBytes: 256 << 20,
	CPUTime:     30 * time.Second,
	WallTime:    30 * time.Second,
	Objects:     10000,
	OutputBytes: 64 << 20,
}

// WithDefaults returns b with every zero field set from def.
func (b Budget) WithDefaults(def Budget) Budget {
	if b.MemoryBytes <= 0 {
		b.MemoryBytes = def.MemoryBytes
	}
	if b.CPUTime <= 0 {
		b.CPUTime = def.CPUTime
	}
	if b.WallTime <= 0 {
		b.WallTime = def.WallTime
	}
	if b.Objects <= 0 {
		b.Objects = def.Objects
	}
	if b.OutputBytes <= 0 {
		b.OutputBytes = def.OutputBytes
	}
	return b
}

// String is the budget as a user reads it, e.g. "memory 256 MiB, cpu 30s, wall 30s,
// 10000 objects, output 64 MiB".
func (b Budget) String() string {
	return fmt.Sprintf("memory %s, cpu %s, wall %s, %d objects, output %s",
		bytesize.Format(b.MemoryBytes), b.CPUTime, b.WallTime, b.Objects, bytesize.Format(b.OutputBytes))
}

// exceeded is the error of a render of release stopped at bound ("memory", "cpu", "wall",
// "objects" or "output"), at file when known, naming the bound's value in b.
func (b Budget) exceeded(bound, release, file string) *BudgetError {
	var limit string
	switch bound {
	case "memory":
		limit = bytesize.Format(b.MemoryBytes)
	case "cpu":
		limit = b.CPUTime.String()
	case "wall":
		limit = b.WallTime.String()
	case "objects":
		limit = strconv.Itoa(b.Objects)
	default:
		bound, limit = "output", bytesize.Format(b.OutputBytes)
	}
	return &BudgetError{Release: release, Bound: bound, Limit: limit, File: file}
}

// admit holds objs to b's objects and output bounds, encoding each as JSON for emit (nil:
// encoded only to be counted). Past a bound it returns that bound and the file of the
// object that passed it.
func (b Budget) admit(objs []object, emit func(raw []byte) error) (bound, file string, err error) {
	var n int64
	for i, o := range objs {
		if i >= b.Objects {
			return "objects", o.file, nil
		}
		raw, err := o.u.MarshalJSON()
		if err != nil {
			return "", "", &Error{File: o.file, Err: fmt.Errorf("encoding object: %w", err)}
		}
		if n += int64(len(raw)); n > b.OutputBytes {
			return "output", o.file, nil
		}
		if emit != nil {
			if err := emit(raw); err != nil {
				return "", "", err
			}
		}
	}
	return "", "", nil
}

// errExpansion: the values substituted for ${...} references add up to more than the render's
// output budget. Substitution stops there, so a file of many references to a large variable
// never grows past the budget in memory.
var errExpansion = errors.New("substituted values exceed the output budget")

// expansion is what substitution may still add to a render, in bytes: the values it puts in
// place of references. A nil *expansion bounds nothing.
type expansion struct{ left int64 }

// take counts n more bytes of substituted values and reports whether they fit.
func (e *expansion) take(n int) bool {
	if e == nil {
		return true
	}
	e.left -= int64(n)
	return e.left >= 0
}
