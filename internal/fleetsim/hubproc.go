package fleetsim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/procstat"
)

// hubProc is `flotilla hub` running as its own process, so that its CPU time and memory are
// its own and can be read from /proc.
type hubProc struct {
	bin, dataDir, fleetDir string
	extra                  []string
	env                    []string // added to the simulator's environment
	agentAddr, apiAddr     string
	cmd                    *exec.Cmd
	exited                 chan struct{}
}

func newHubProc(bin, dataDir, fleetDir string, extra []string) *hubProc {
	return &hubProc{bin: bin, dataDir: dataDir, fleetDir: fleetDir, extra: extra, agentAddr: "127.0.0.1:0", apiAddr: "127.0.0.1:0"}
}

// start runs the hub and waits until it prints its endpoints; the first start picks free
// ports, a restart reuses them so that agents find the hub where it was.
func (h *hubProc) start(ctx context.Context) error {
	args := append([]string{"hub", "--data-dir", h.dataDir, "--fleet", h.fleetDir,
		"--agent-addr", h.agentAddr, "--api-addr", h.apiAddr, "--log-level", "warn",
		"--allow-file-sources", filepath.Dir(h.fleetDir)}, h.extra...) // the source repository is beside the fleet
	h.cmd = exec.CommandContext(ctx, h.bin, args...) // no hub outlives the run
	if h.env != nil {
		h.cmd.Env = append(os.Environ(), h.env...)
	}
	stderr, err := h.cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := h.cmd.Start(); err != nil {
		return fmt.Errorf("start hub %s: %w", h.bin, err)
	}
	h.exited = make(chan struct{})
	go func() { _ = h.cmd.Wait(); close(h.exited) }() // how it ended shows in its log
	logFile, err := os.OpenFile(filepath.Join(filepath.Dir(h.dataDir), "hub.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		h.kill()
		return err
	}
	agentURL, apiURL, err := readAddresses(stderr, logFile)
	if err != nil {
		h.kill()
		return fmt.Errorf("hub %s: %w", h.bin, err)
	}
	h.agentAddr, h.apiAddr = strings.TrimPrefix(agentURL, "https://"), strings.TrimPrefix(apiURL, "https://")
	return nil
}

// readAddresses reads the endpoints the hub prints on start, then copies the rest of its
// stderr (warnings) to log, so that the hub never blocks on a full pipe.
func readAddresses(r io.Reader, log *os.File) (agentURL, apiURL string, err error) {
	sc := bufio.NewScanner(r)
	var last []string
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "Hub agent endpoint: "); ok {
			agentURL = strings.TrimSpace(v)
		} else if v, ok := strings.CutPrefix(line, "Hub API:"); ok {
			apiURL = strings.TrimSpace(v)
		} else {
			last = append(last, line)
		}
		if agentURL != "" && apiURL != "" {
			go func() { _, _ = io.Copy(log, r); _ = log.Close() }() // best effort: the log is for a person reading it
			return agentURL, apiURL, nil
		}
	}
	_ = log.Close() // best effort: the log is for a person reading it
	return "", "", fmt.Errorf("exited before printing its addresses: %s", strings.Join(last, "\n"))
}

func (h *hubProc) agentURL() string { return "https://" + h.agentAddr }

func (h *hubProc) pid() int { return h.cmd.Process.Pid }

// stop interrupts the hub and waits for it (killing it after 20s).
func (h *hubProc) stop() error {
	if h.cmd == nil || h.cmd.Process == nil {
		return nil
	}
	_ = h.cmd.Process.Signal(os.Interrupt)
	select {
	case <-h.exited:
		return nil
	case <-time.After(20 * time.Second):
		h.kill()
		return errors.New("hub did not stop within 20s of SIGINT; killed")
	}
}

func (h *hubProc) kill() {
	if h.cmd != nil && h.cmd.Process != nil {
		_ = h.cmd.Process.Kill()
		<-h.exited
	}
}

func (h *hubProc) client() (*hubclient.Client, error) {
	token, err := os.ReadFile(filepath.Join(h.dataDir, "admin.token"))
	if err != nil {
		return nil, err
	}
	return hubclient.NewClient(hubclient.Config{Hub: "https://" + h.apiAddr, Token: strings.TrimSpace(string(token)), CAFile: filepath.Join(h.dataDir, "ca.crt")})
}

// procSample is a process's CPU time and peak memory, read together.
type procSample struct {
	CPU  time.Duration
	Peak int64
}

func sampleProc(pid int) (procSample, error) {
	cpu, err := procstat.CPU(pid)
	if err != nil {
		return procSample{}, err
	}
	hwm, err := procstat.Bytes(pid, procstat.Peak)
	return procSample{CPU: cpu, Peak: hwm}, err
}
