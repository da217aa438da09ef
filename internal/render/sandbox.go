package render

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla/flotilla/internal/procstat"
)

// ErrBudget: a render used more than its Budget allows and was stopped. The same revision
// may render next time (the budget may be raised, a busy machine may be quieter), so the
// caller retries it on its usual backoff; errors.As a *BudgetError says which bound.
var ErrBudget = errors.New("render budget exceeded")

// BudgetError says which bound of its Budget a render exceeded.
type BudgetError struct {
	// Release is Options.Release; empty when the caller named none.
	Release string
	// Bound is "memory", "cpu", "wall", "objects" or "output".
	Bound string
	// Limit is the bound's value as a user reads it ("256 MiB", "30s", "10000").
	Limit string
	// File is the file the render was at, relative to the root, when known.
	File string
}

// Error formats as "render of release a-web stopped: memory budget 256 MiB exceeded
// (apps/web/Chart.yaml)".
func (e *BudgetError) Error() string {
	var b strings.Builder
	b.WriteString("render")
	if e.Release != "" {
		b.WriteString(" of release ")
		b.WriteString(e.Release)
	}
	fmt.Fprintf(&b, " stopped: %s budget %s exceeded", e.Bound, e.Limit)
	if e.File != "" {
		fmt.Fprintf(&b, " (%s)", e.File)
	}
	return b.String()
}

func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// SandboxOptions configure a Sandbox.
type SandboxOptions struct {
	// Concurrent bounds the child renders running at once; default DefaultConcurrent.
	Concurrent int
	// Executable is the binary run as the child with ChildVerb; default os.Executable().
	Executable string
	// Interval is how often the child's resident size and CPU time are read; default 5ms.
	Interval time.Duration
}

// DefaultConcurrent is how many child renders a Sandbox runs at once by default.
const DefaultConcurrent = 4

// Sandbox renders each release in a child process of its own, bounded while it runs by the
// release's Budget: a chart or kustomization that allocates without end, spins or writes
// without end is killed at its bound and fails only its own release. Child renders share
// Concurrent slots fairly between Projects (see fair). The zero value is not usable: use
// NewSandbox.
type Sandbox struct {
	exe      string
	interval time.Duration
	slots    *fair
}

// NewSandbox returns a Sandbox.
func NewSandbox(o SandboxOptions) (*Sandbox, error) {
	if o.Concurrent <= 0 {
		o.Concurrent = DefaultConcurrent
	}
	if o.Interval <= 0 {
		o.Interval = 5 * time.Millisecond
	}
	if o.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("render sandbox: own executable: %w", err)
		}
		o.Executable = exe
	}
	if err := childHookMissing(o.Executable); err != nil {
		return nil, err
	}
	return &Sandbox{exe: o.Executable, interval: o.Interval, slots: newFair(o.Concurrent)}, nil
}

// exporter is a Decryptor that can say how to rebuild itself in the child: secrets.Decryptor.
type exporter interface {
	Export() (who, identity string)
}

// Render is Render in a child process, under opts.Budget (zero fields: DefaultBudget's).
// Errors are *Error, or *BudgetError (errors.Is ErrBudget) when a bound was exceeded.
func (s *Sandbox) Render(ctx context.Context, opts Options) ([]*unstructured.Unstructured, error) {
	b := opts.Budget.WithDefaults(DefaultBudget)
	if objs, ok, err := renderInProcess(ctx, opts, b); ok {
		return objs, err
	}
	req := childRequest{Root: opts.Root, Path: opts.Path, Vars: opts.Vars, Helm: opts.Helm, KeepEncrypted: opts.KeepEncrypted, Budget: b}
	if opts.Decrypt != nil {
		ex, ok := opts.Decrypt.(exporter)
		if !ok {
			return nil, &Error{Err: fmt.Errorf("decryptor %T cannot be handed to the render process", opts.Decrypt)}
		}
		who, id := ex.Export()
		req.Decrypt = &childKey{Who: who, Identity: id}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, &Error{Err: fmt.Errorf("render request: %w", err)}
	}
	release, err := s.slots.acquire(ctx, opts.Project)
	if err != nil {
		return nil, &Error{Err: fmt.Errorf("waiting for a render slot: %w", err)}
	}
	defer release()
	return s.run(ctx, body, b, opts.Release)
}

// run starts the child, feeds it the request, watches it and reads its objects.
func (s *Sandbox) run(ctx context.Context, body []byte, b Budget, releaseName string) ([]*unstructured.Unstructured, error) {
	// The wall time counts from the child's start, not from the wait for a slot.
	wctx, cancel := context.WithTimeout(ctx, b.WallTime)
	defer cancel()
	cmd := exec.Command(s.exe, ChildVerb) //nolint:noctx // the watcher below kills its whole process group on ctx; exec would kill only the leader
	cmd.Stdin = bytes.NewReader(body)
	cmd.Env = []string{"GOMAXPROCS=1", "PATH=/usr/bin:/bin"}
	var stderr limitedBuffer
	stderr.max = 16 << 10
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, &Error{Err: fmt.Errorf("render process: %w", err)}
	}
	if err := cmd.Start(); err != nil {
		return nil, &Error{Err: fmt.Errorf("render process %s: %w", s.exe, err)}
	}
	pid := cmd.Process.Pid
	kill := func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }

	// stop records the first reason the child was killed.
	stopped := make(chan *BudgetError, 1)
	stop := func(e *BudgetError) {
		select {
		case stopped <- e:
			kill()
		default:
		}
	}
	var at atomicString
	over := func(bound string) *BudgetError { return b.exceeded(bound, releaseName, at.load()) }
	quit, watchDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watchDone)
		t := time.NewTicker(s.interval)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				if ctx.Err() == nil {
					stop(over("wall"))
				} else {
					kill()
				}
				return
			case <-t.C:
				if rss, err := procstat.Bytes(pid, "RssAnon"); err == nil && rss > b.MemoryBytes {
					stop(over("memory"))
					return
				}
				if cpu, err := procstat.CPU(pid); err == nil && cpu > b.CPUTime {
					stop(over("cpu"))
					return
				}
			case <-quit:
				return
			}
		}
	}()

	objs, readErr := s.read(stdout, b, releaseName, &at, stop)
	if readErr != nil {
		kill()
	}
	_, _ = io.Copy(io.Discard, stdout)
	waitErr := cmd.Wait()
	close(quit)
	<-watchDone

	select {
	case e := <-stopped:
		return nil, e
	default:
	}
	if ctx.Err() != nil {
		return nil, &Error{Err: fmt.Errorf("rendering stopped: %w", ctx.Err())}
	}
	if readErr != nil {
		return nil, readErr
	}
	if waitErr != nil {
		msg := stderr.String()
		switch {
		case strings.Contains(msg, "out of memory"), strings.Contains(msg, "cannot allocate memory"):
			return nil, over("memory")
		case cmd.ProcessState != nil && cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime() >= b.CPUTime:
			return nil, over("cpu")
		}
		return nil, &Error{File: at.load(), Err: fmt.Errorf("render process failed: %v: %s", waitErr, firstLine(msg))}
	}
	return objs, nil
}

// read decodes the child's frames, counting objects and bytes as they arrive: past the
// budget's objects or output it calls over, which kills the child, and returns.
func (s *Sandbox) read(r io.Reader, b Budget, release string, at *atomicString, over func(*BudgetError)) ([]*unstructured.Unstructured, error) {
	stop := func(bound, file string) error {
		e := b.exceeded(bound, release, file)
		over(e)
		return e
	}
	// A frame is an object's JSON and a few bytes of framing; anything longer than the
	// output budget allows is over it whatever it holds.
	br := bufio.NewReaderSize(r, 64<<10)
	var objs []*unstructured.Unstructured
	var total int64
	for {
		line, err := readLine(br, b.OutputBytes-total+1024)
		if errors.Is(err, errLineTooLong) {
			return nil, stop("output", at.load())
		}
		if err != nil {
			return nil, &Error{File: at.load(), Err: errors.New("render process ended before its output was complete")}
		}
		var f childFrame
		if err := json.Unmarshal(line, &f); err != nil {
			return nil, &Error{File: at.load(), Err: fmt.Errorf("render process output: %w", err)}
		}
		switch {
		case f.At != "":
			at.store(f.At)
		case f.Err != nil:
			if f.Err.Bound != "" {
				return nil, stop(f.Err.Bound, f.Err.File)
			}
			return nil, &Error{File: f.Err.File, Line: f.Err.Line, Object: f.Err.Object, Err: &remoteCause{msg: f.Err.Message, sentinel: sentinels[f.Err.Sentinel]}}
		case f.Done:
			return objs, nil
		case len(f.Object) > 0:
			total += int64(len(f.Object))
			if len(objs) >= b.Objects {
				return nil, stop("objects", at.load())
			}
			if total > b.OutputBytes {
				return nil, stop("output", at.load())
			}
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(f.Object); err != nil {
				return nil, &Error{File: at.load(), Err: fmt.Errorf("render process output: %w", err)}
			}
			objs = append(objs, u)
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one newline-terminated line of at most max bytes.
func readLine(br *bufio.Reader, max int64) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if int64(len(line)) > max {
			return nil, errLineTooLong
		}
		if err == nil {
			return line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// firstLine is what a failed child said first: a Go panic's first line says what happened,
// the rest is its stack.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// atomicString is the file the child says it is at, written by read and read by the watch.
type atomicString struct{ p atomic.Pointer[string] }

func (a *atomicString) store(s string) { a.p.Store(&s) }
func (a *atomicString) load() string {
	if p := a.p.Load(); p != nil {
		return *p
	}
	return ""
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.Len(); room > 0 {
		l.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// Lazy is a Sandbox made on first use, with Options: the agent and the hub hold one as a
// field, and a process that never renders never resolves its executable. The zero value is
// ready to use.
type Lazy struct {
	Options SandboxOptions

	once sync.Once
	s    *Sandbox
	err  error
}

// Render is Sandbox.Render on the Sandbox made with l.Options, or the error making it gave.
func (l *Lazy) Render(ctx context.Context, opts Options) ([]*unstructured.Unstructured, error) {
	l.once.Do(func() { l.s, l.err = NewSandbox(l.Options) })
	if l.err != nil {
		return nil, l.err
	}
	return l.s.Render(ctx, opts)
}
