package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process is one running control-plane binary (etcd or kube-apiserver) with its output going to a
// log file in the cluster's directory.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed once the process has exited and been reaped
	waitErr error         // valid after done is closed
}

func startProcess(name, binary string, args []string, logPath string) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: open log: %w", name, err)
	}
	cmd := exec.Command(binary, args...) //nolint:noctx // it lives until Stop (or this process dies: Pdeathsig), not for a caller's context
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group, so a Ctrl-C in the terminal reaches only us and we stop the
		// cluster in order (API server first, then etcd).
		Setpgid: true,
		// If the parent dies without stopping the cluster (a panicking or killed test binary),
		// the kernel kills the child: no orphaned etcd keeps its port.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close() // already failing: the first error is the one returned
		return nil, fmt.Errorf("%s: start %s: %w", name, binary, err)
	}
	p := &Process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close() // best effort: the log is for a person reading it
		close(p.done)
	}()
	return p, nil
}

// PID is the operating system's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// LogPath is the file that receives the process's standard output and error.
func (p *Process) LogPath() string { return p.logPath }

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// Kill ends the process at once with SIGKILL and waits until it is gone. Fault tests use it to
// make etcd or the API server die the way a crash would.
func (p *Process) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop asks the process to end with SIGTERM and kills it if it is still running after grace.
// It returns once the process has been reaped, so its ports are free.
func (p *Process) Stop(grace time.Duration) {
	if exited, _ := p.Exited(); exited {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.Kill()
	}
}

// exitError describes how the process ended, with the end of its log, for errors that have to
// explain why a cluster did not come up.
func (p *Process) exitError() error {
	_, err := p.Exited()
	if err == nil {
		err = errors.New("exited with status 0")
	}
	return fmt.Errorf("%s exited: %w; last lines of %s:\n%s", p.name, err, p.logPath, p.logTail(20))
}

// logTail returns the last n lines of the process's log.
func (p *Process) logTail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("  ")
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.String()
}
