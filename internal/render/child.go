package render

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/flotilla/flotilla/internal/procstat"
	"github.com/flotilla/flotilla/internal/secrets"
)

// ChildVerb is the hidden first argument that makes the binary a render child (see Sandbox):
// `flotilla __render` reads one request on stdin and writes its objects on stdout.
const ChildVerb = "__render"

// childRequest is what the parent sends the child on stdin: never on argv or in the
// environment, which other users of the machine can read (/proc/PID/cmdline, environ).
type childRequest struct {
	Root          string            `json:"root"`
	Path          string            `json:"path"`
	Vars          map[string]string `json:"vars,omitempty"`
	Helm          *Helm             `json:"helm,omitempty"`
	KeepEncrypted bool              `json:"keepEncrypted,omitempty"`
	Budget        Budget            `json:"budget"`
	// Decrypt rebuilds the parent's secrets decryptor: its label and age identity.
	Decrypt *childKey `json:"decrypt,omitempty"`
}

type childKey struct {
	Who      string `json:"who"`
	Identity string `json:"identity"`
}

// childFrame is one line of the child's output: an object, the file being rendered (so a
// budget error can name it), the final error, or the end.
type childFrame struct {
	Object json.RawMessage `json:"o,omitempty"`
	At     string          `json:"at,omitempty"`
	Err    *childError     `json:"err,omitempty"`
	Done   bool            `json:"done,omitempty"`
}

// childError is an *Error across the pipe: its place, its message, and which of the
// package's sentinels it wraps, so that errors.Is holds on the parent's side too.
type childError struct {
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Object   string `json:"object,omitempty"`
	Message  string `json:"message"`
	Sentinel string `json:"sentinel,omitempty"`
	// Bound is set when the child itself found a budget exceeded (objects, output).
	Bound string `json:"bound,omitempty"`
}

// sentinels are the causes an error keeps across the pipe, by name.
var sentinels = map[string]error{
	"outside-root":     ErrOutsideRoot,
	"remote":           ErrRemoteNotAllowed,
	"config":           ErrConfigNotCheckable,
	"plugins":          ErrPluginsNotAllowed,
	"helm":             ErrHelmNotAllowed,
	"undefined-var":    ErrUndefinedVariable,
	"encrypted":        ErrEncrypted,
	"not-for-this-key": secrets.ErrNotForThisKey,
}

// remoteCause is an error rebuilt from the child's message, wrapping its sentinel.
type remoteCause struct {
	msg      string
	sentinel error
}

func (e *remoteCause) Error() string { return e.msg }
func (e *remoteCause) Unwrap() error { return e.sentinel }

// RunChildIfRequested makes this process a render child and exits when its first argument is
// ChildVerb; otherwise it returns at once. Call it first in a test binary's TestMain, so that
// a Sandbox in the test finds the verb in os.Executable() as it does in the flotilla binary.
func RunChildIfRequested() {
	childHook.Store(true)
	if len(os.Args) < 2 || os.Args[1] != ChildVerb {
		return
	}
	os.Exit(RunChild(os.Stdin, os.Stdout))
}

// childHook records that RunChildIfRequested ran in this process: a test binary without
// it would, run as a child, run its whole test suite instead of rendering, so NewSandbox
// refuses to use such a binary (childHookMissing).
var childHook atomic.Bool

// childHookMissing says why exe cannot serve as the render child: a test binary (name
// ending in .test) whose TestMain does not call RunChildIfRequested.
func childHookMissing(exe string) error {
	if strings.HasSuffix(exe, ".test") && !childHook.Load() {
		return fmt.Errorf("render sandbox: test binary %s does not serve renders: call render.RunChildIfRequested() first in its TestMain", exe)
	}
	return nil
}

// RunChild serves one render request from in on out, bounding its own process first, and
// returns the exit code.
func RunChild(in io.Reader, out io.Writer) int {
	var req childRequest
	if err := json.NewDecoder(io.LimitReader(in, 64<<20)).Decode(&req); err != nil {
		fmt.Fprintf(os.Stderr, "render child: request: %v\n", err)
		return 2
	}
	b := req.Budget.WithDefaults(DefaultBudget)
	limitSelf(b)
	w := bufio.NewWriterSize(out, 64<<10)
	defer func() { _ = w.Flush() }() // a failed flush means the parent has gone: it sees no Done frame
	enc := json.NewEncoder(w)
	fail := func(err error) int {
		_ = enc.Encode(childFrame{Err: toChildError(err)})
		return 0
	}
	opts := Options{Root: req.Root, Path: req.Path, Vars: req.Vars, Helm: req.Helm, KeepEncrypted: req.KeepEncrypted, Budget: b}
	if opts.Helm != nil {
		lim := opts.Helm.limits()
		lim.outputBytes = min(lim.outputBytes, b.OutputBytes)
		opts.Helm.lim = &lim
	}
	if req.Decrypt != nil {
		dec, err := secrets.NewDecryptor(req.Decrypt.Who, req.Decrypt.Identity)
		if err != nil {
			return fail(err)
		}
		opts.Decrypt = dec
	}
	opts.at = func(file string) {
		_ = enc.Encode(childFrame{At: file})
		_ = w.Flush()
	}
	objs, err := render(context.Background(), opts)
	if err != nil {
		return fail(err)
	}
	gone := errors.New("the parent has gone")
	bound, file, err := b.admit(objs, func(raw []byte) error {
		if err := enc.Encode(childFrame{Object: raw}); err != nil {
			return gone
		}
		return nil
	})
	switch {
	case errors.Is(err, gone):
		return 1
	case err != nil:
		return fail(err)
	case bound != "":
		return fail(&childError{File: file, Bound: bound, Message: bound})
	}
	_ = enc.Encode(childFrame{Done: true})
	return 0
}

func (e *childError) Error() string { return e.Message }

// toChildError is err as the child sends it.
func toChildError(err error) *childError {
	var ce *childError
	if errors.As(err, &ce) {
		return ce
	}
	if be := (*BudgetError)(nil); errors.As(err, &be) {
		return &childError{File: be.File, Bound: be.Bound, Message: be.Error()}
	}
	out := &childError{Message: err.Error()}
	var re *Error
	if errors.As(err, &re) {
		out.File, out.Line, out.Object = re.File, re.Line, re.Object
		if re.Err != nil {
			out.Message = re.Err.Error()
		}
	}
	for name, s := range sentinels {
		if errors.Is(err, s) {
			out.Sentinel = name
			break
		}
	}
	return out
}

// limitSelf bounds the child's own process: Go's soft memory limit at nine tenths of the
// budget (the collector works harder before the parent's watch kills at the budget), address
// space at what the process maps now plus the budget and a margin (Go reserves address space
// ahead of use; beyond this it fails an allocation and dies at once, where the parent's watch
// of the resident size could be a few milliseconds late), and CPU time a second above the
// budget (the parent kills at the budget; this holds even if the parent is stalled).
func limitSelf(b Budget) {
	debug.SetMemoryLimit(b.MemoryBytes / 10 * 9)
	if vm, err := procstat.Bytes(os.Getpid(), "VmSize"); err == nil {
		as := uint64(vm) + uint64(b.MemoryBytes) + addressMargin
		_ = syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as})
	}
	cpu := uint64(math.Ceil(b.CPUTime.Seconds())) + 1
	_ = syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: cpu, Max: cpu})
}

// addressMargin is the address space a child may map above its budget: Go's heap arenas
// are reserved in 64 MiB steps, and thread stacks and the collector's metadata are mapped
// apart from the heap.
const addressMargin = 1 << 30
