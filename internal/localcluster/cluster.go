package localcluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/flotilla/flotilla/internal/procstat"
)

// Options configure one local cluster. The zero value is usable; see the field comments for the
// defaults.
type Options struct {
	// Name names the cluster in its kubeconfig (cluster, user and context) and in errors.
	// Default "local".
	Name string
	// BinDir is the directory holding kube-apiserver and etcd. Default: searched, see the
	// package documentation.
	BinDir string
	// Dir receives the cluster's data, certificates, logs and kubeconfig. Default: a new
	// temporary directory, removed by Stop. A Dir given here is kept.
	Dir string
	// StartTimeout bounds the time from starting etcd to the API server's /readyz saying ok.
	// Default 2 minutes (a cold kube-apiserver on a busy 2-core machine needs tens of seconds).
	StartTimeout time.Duration
	// StopGrace is how long Stop waits after SIGTERM before it sends SIGKILL. Default 10s.
	StopGrace time.Duration
	// ExtraAPIServerArgs are appended to kube-apiserver's command line, e.g. a feature gate.
	ExtraAPIServerArgs []string
}

func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = "local"
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 2 * time.Minute
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 10 * time.Second
	}
	return o
}

// Cluster is a running local control plane. Its methods are safe for concurrent use.
type Cluster struct {
	opts       Options
	dir        string
	removeDir  bool
	host       string
	token      string
	caPEM      []byte
	kubeconfig string
	ports      []int
	etcd       *Process
	apiserver  *Process
	readyzHTTP *http.Client
	kubectl    string // path, "" if not built
	// apiserverBin and apiserverArgs restart the API server as it was (RestartAPIServer).
	apiserverBin  string
	apiserverArgs []string
	mu            sync.Mutex // guards apiserver across restarts, and base
	// base is the state Reset returns to, set by MarkBaseline.
	base     *baseline
	stopOnce sync.Once
	stopErr  error
}

// startAttempts bounds the retries when a port picked as free was taken by someone else before
// etcd or kube-apiserver could bind it.
const startAttempts = 3

// Start starts etcd and kube-apiserver and returns once the API server's /readyz says ok. On any
// error nothing is left running. Cancelling ctx aborts a start in progress; it does not stop a
// cluster that has started (call Stop).
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts = opts.withDefaults()
	bins, err := findBinaries(opts.BinDir)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", opts.Name, err)
	}
	c := &Cluster{opts: opts, dir: opts.Dir, kubectl: bins.kubectl}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "flotilla-cluster-"+opts.Name+"-"); err != nil {
			return nil, fmt.Errorf("cluster %q: create data directory: %w", opts.Name, err)
		}
		c.removeDir = true
	} else if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, fmt.Errorf("cluster %q: create data directory: %w", opts.Name, err)
	}
	if err := c.start(ctx, bins); err != nil {
		_ = c.Stop()
		return nil, fmt.Errorf("cluster %q: %w", opts.Name, err)
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, bins binaries) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()

	pki, err := writePKI(c.dir, time.Now())
	if err != nil {
		return err
	}
	c.caPEM = pki.caPEM
	c.token = randomToken()
	tokenFile := filepath.Join(c.dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(c.token+",admin,admin-uid,system:masters\n"), 0o600); err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.caPEM)
	c.readyzHTTP = &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}

	for attempt := 1; ; attempt++ {
		err := c.startProcesses(ctx, bins, pki, tokenFile)
		if err == nil {
			break
		}
		c.stopProcesses()
		if !errors.Is(err, errPortTaken) || attempt == startAttempts {
			return err
		}
	}
	return c.writeKubeconfig()
}

var errPortTaken = errors.New("port taken")

func (c *Cluster) startProcesses(ctx context.Context, bins binaries, pki pkiFiles, tokenFile string) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	c.ports = ports
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	c.host = "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(apiPort))

	etcdData := filepath.Join(c.dir, "etcd")
	// A failed attempt may have initialised etcd with other peer URLs: start from nothing.
	if err := os.RemoveAll(etcdData); err != nil {
		return err
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	c.etcd, err = startProcess("etcd", bins.etcd, []string{
		"--name=" + c.opts.Name,
		"--data-dir=" + etcdData,
		"--listen-client-urls=" + clientURL,
		"--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=" + c.opts.Name + "=" + peerURL,
		// The data of a local cluster is thrown away with it; fsync would only slow tests.
		"--unsafe-no-fsync",
		"--log-level=warn",
	}, filepath.Join(c.dir, "etcd.log"))
	if err != nil {
		return err
	}
	if err := c.waitFor(ctx, c.etcd, func(ctx context.Context) error {
		return httpOK(ctx, http.DefaultClient, clientURL+"/health", "")
	}); err != nil {
		return fmt.Errorf("etcd did not become healthy: %w", err)
	}

	args := []string{
		"--etcd-servers=" + clientURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--tls-cert-file=" + pki.servingCert,
		"--tls-private-key-file=" + pki.servingKey,
		"--cert-dir=" + filepath.Join(c.dir, "certs"),
		"--token-auth-file=" + tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=" + c.host,
		"--service-account-key-file=" + pki.saKey,
		"--service-account-signing-key-file=" + pki.saKey,
		// Only a configuration value: no Service traffic ever flows in a local cluster.
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		// The endpoint reconciler refuses a loopback address, and nothing here routes to the
		// kubernetes Service it would maintain.
		"--endpoint-reconciler-type=none",
		// No controller manager runs to create service account tokens.
		"--disable-admission-plugins=ServiceAccount",
	}
	args = append(args, c.opts.ExtraAPIServerArgs...)
	c.apiserverBin, c.apiserverArgs = bins.apiserver, args
	c.apiserver, err = startProcess("kube-apiserver", bins.apiserver, args, filepath.Join(c.dir, "kube-apiserver.log"))
	if err != nil {
		return err
	}
	if err := c.waitFor(ctx, c.apiserver, c.Ready); err != nil {
		return fmt.Errorf("kube-apiserver did not become ready: %w", err)
	}
	return nil
}

// waitFor polls check until it succeeds, p exits or ctx ends. An exit caused by a port that
// someone else bound in the meantime is reported as errPortTaken so that Start retries.
func (c *Cluster) waitFor(ctx context.Context, p *Process, check func(context.Context) error) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if exited, _ := p.Exited(); exited {
			err := p.exitError()
			if strings.Contains(err.Error(), "address already in use") {
				return fmt.Errorf("%w: %w", errPortTaken, err)
			}
			return err
		}
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last check: %v); see %s", ctx.Err(), err, p.LogPath())
		case <-tick.C:
		}
	}
}

// Ready reports whether the API server answers /readyz with ok. It fails fast when etcd or
// kube-apiserver has exited, and otherwise within a few seconds even if the API server hangs.
func (c *Cluster) Ready(ctx context.Context) error {
	for _, p := range []*Process{c.etcd, c.APIServer()} {
		if p == nil {
			return errors.New("not started")
		}
		if exited, _ := p.Exited(); exited {
			return p.exitError()
		}
	}
	return httpOK(ctx, c.readyzHTTP, c.host+"/readyz?verbose", c.token)
}

func httpOK(ctx context.Context, client *http.Client, url, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, failedChecks(body))
	}
	return nil
}

// failedChecks keeps the lines of a verbose /readyz answer that name failed checks, so that an
// error says "etcd failed" rather than repeating forty "ok" lines.
func failedChecks(body []byte) string {
	var failed []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.Contains(line, "failed") {
			failed = append(failed, strings.TrimSpace(line))
		}
	}
	if len(failed) == 0 {
		return strings.TrimSpace(string(body))
	}
	return strings.Join(failed, "; ")
}

func (c *Cluster) writeKubeconfig() error {
	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	name := c.opts.Name
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.host, CertificateAuthorityData: c.caPEM}
	cfg.AuthInfos[name+"-admin"] = &clientcmdapi.AuthInfo{Token: c.token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin"}
	cfg.CurrentContext = name
	if err := clientcmd.WriteToFile(*cfg, c.kubeconfig); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", c.kubeconfig, err)
	}
	return nil
}

// Name is the cluster's name from Options.
func (c *Cluster) Name() string { return c.opts.Name }

// Dir is the directory holding the cluster's data, certificates, logs and kubeconfig.
func (c *Cluster) Dir() string { return c.dir }

// KubeconfigPath is a kubeconfig file for the cluster's admin (system:masters).
func (c *Cluster) KubeconfigPath() string { return c.kubeconfig }

// Host is the API server's URL, e.g. https://127.0.0.1:41234.
func (c *Cluster) Host() string { return c.host }

// Ports are the loopback TCP ports the cluster listens on (etcd client, etcd peer, API server).
func (c *Cluster) Ports() []int { return append([]int(nil), c.ports...) }

// Etcd is the etcd process, for fault tests that kill it.
func (c *Cluster) Etcd() *Process { return c.etcd }

// APIServer is the kube-apiserver process, for fault tests that kill it.
func (c *Cluster) APIServer() *Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.apiserver
}

// RestartAPIServer starts kube-apiserver again, on the same port with the same data, after a
// fault test stopped or killed it, and waits until it is ready.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	old := c.apiserver
	c.mu.Unlock()
	if exited, _ := old.Exited(); !exited {
		return fmt.Errorf("cluster %q: kube-apiserver is still running", c.opts.Name)
	}
	p, err := startProcess("kube-apiserver", c.apiserverBin, c.apiserverArgs, filepath.Join(c.dir, "kube-apiserver.log"))
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.apiserver = p
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	if err := c.waitFor(ctx, p, c.Ready); err != nil {
		return fmt.Errorf("cluster %q: restarted kube-apiserver did not become ready: %w", c.opts.Name, err)
	}
	return nil
}

// RESTConfig returns a new client configuration for the cluster's admin. Callers may change it.
func (c *Cluster) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            c.host,
		BearerToken:     c.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), c.caPEM...)},
	}
}

// Kubectl runs kubectl against the cluster as its admin and returns its combined output. The
// error says so when kubectl was not built.
func (c *Cluster) Kubectl(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	if c.kubectl == "" {
		return nil, fmt.Errorf("kubectl %w next to kube-apiserver: run %q", ErrBinaryNotFound, BuildTarget)
	}
	cmd := exec.CommandContext(ctx, c.kubectl, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return out, nil
}

// ResidentBytes is the resident memory of etcd and kube-apiserver together, read from /proc.
func (c *Cluster) ResidentBytes() (int64, error) {
	var total int64
	for _, p := range []*Process{c.etcd, c.APIServer()} {
		n, err := procstat.Bytes(p.PID(), procstat.Resident)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", p.name, err)
		}
		total += n
	}
	return total, nil
}

// Stop stops kube-apiserver, then etcd (SIGTERM, then SIGKILL after the grace period), and
// removes the data directory if Start created it. It returns once both processes are gone, so
// their ports are free. Calling it again does nothing.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.stopProcesses()
		if c.removeDir {
			c.stopErr = os.RemoveAll(c.dir)
		}
	})
	return c.stopErr
}

func (c *Cluster) stopProcesses() {
	// The API server first: stopping etcd under it would only make it log errors while it
	// shuts down.
	for _, p := range []*Process{c.APIServer(), c.etcd} {
		if p != nil {
			p.Stop(c.opts.StopGrace)
		}
	}
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never returns an error on Linux
	return hex.EncodeToString(b)
}
