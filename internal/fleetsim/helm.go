package fleetsim

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// The Helm mode (Options.Helm): every release is one chart from a chart repository the
// simulator serves over TLS, fetched by the hub (Source.spec.helm) and rendered by every agent
// with its cluster's own values: ${cluster_name} and a replica count from the cluster's
// "replicas" label, substituted into Release.spec.helm.values.

// helmChartName is the generated chart's name.
const helmChartName = "fleet-app"

// HelmReport says what the Helm mode served: the chart, its versions (one per wave), and what
// its repository sent, all of it to the hub (agents never contact it).
type HelmReport struct {
	Chart     string   `json:"chart"`
	Templates int      `json:"templates"`
	Versions  []string `json:"versions"`
	// Repository is the chart repository's URL; RepositoryRequests and RepositoryBytes count
	// what it answered over the whole run.
	Repository         string `json:"repository"`
	RepositoryRequests int64  `json:"repositoryRequests"`
	RepositoryBytes    int64  `json:"repositoryBytes"`
}

func (h *HelmReport) writeTable(w io.Writer) {
	fmt.Fprintf(w, "\nhelm: chart %s (%d templates), versions %s, from %s: %d requests, %s served, all to the hub\n",
		h.Chart, h.Templates, strings.Join(h.Versions, " then "), h.Repository, h.RepositoryRequests, humanBytes(h.RepositoryBytes))
}

// helmClusterLabels are cluster i's labels in the Helm mode: the simulated clusters' labels
// and a replica count of its own, which its values read.
func helmClusterLabels(i int) map[string]string {
	l := map[string]string{"replicas": strconv.Itoa(1 + i%5)}
	for k, v := range simLabels {
		l[k] = v
	}
	return l
}

// chartRepo is a chart repository served over TLS on loopback, with a CA of its own that the
// hub process trusts (SSL_CERT_FILE).
type chartRepo struct {
	opts   Options
	url    string
	caFile string
	srv    *http.Server

	mu       sync.Mutex
	index    *repo.IndexFile
	archives map[string][]byte // by path

	requests, bytes atomic.Int64
}

func startChartRepo(opts Options) (*chartRepo, error) {
	r := &chartRepo{opts: opts, index: repo.NewIndexFile(), archives: map[string][]byte{}}
	cert, caPEM, err := selfSignedLoopback()
	if err != nil {
		return nil, fmt.Errorf("fleet simulator: chart repository certificate: %w", err)
	}
	r.caFile = filepath.Join(opts.Dir, "chart-repository-ca.pem")
	if err := os.WriteFile(r.caFile, caPEM, 0o644); err != nil {
		return nil, fmt.Errorf("fleet simulator: %w", err)
	}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fleet simulator: chart repository: %w", err)
	}
	r.url = "https://" + ln.Addr().String() + "/charts"
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = r.srv.ServeTLS(ln, "", "") }()
	return r, nil
}

func (r *chartRepo) close() { _ = r.srv.Close() }

func (r *chartRepo) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	var body []byte
	var err error
	if req.URL.Path == "/charts/index.yaml" {
		body, err = yaml.Marshal(r.index)
	} else if data, ok := r.archives[req.URL.Path]; ok {
		body = data
	}
	r.mu.Unlock()
	r.requests.Add(1)
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	case body == nil:
		http.NotFound(w, req)
		return
	}
	// The index revalidates by its ETag, as a real repository's does.
	etag := fmt.Sprintf(`"%x"`, sha256.Sum256(body))
	w.Header().Set("ETag", etag)
	if req.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	n, _ := w.Write(body)
	r.bytes.Add(int64(n))
}

// publish packages version of the chart and adds it to the index; it returns the revision
// the hub will show for it ("<version>@sha256:<archive digest>").
func (r *chartRepo) publish(version string) (string, error) {
	c := fleetChart(r.opts, version)
	dir, err := os.MkdirTemp(r.opts.Dir, "chart-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	file, err := chartutil.Save(c, dir)
	if err != nil {
		return "", fmt.Errorf("fleet simulator: package chart %s %s: %w", helmChartName, version, err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	name := filepath.Base(file)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.archives["/charts/"+name] = data
	if err := r.index.MustAdd(c.Metadata, name, "", digest); err != nil {
		return "", fmt.Errorf("fleet simulator: index chart %s %s: %w", helmChartName, version, err)
	}
	return version + "@sha256:" + digest, nil
}

// fleetChart is a real-world-shaped chart: a helpers file with named templates, a
// Deployment whose replicas and environment come from values, a Service, and ConfigMaps of
// about ObjectSize bytes, opts.Objects templates in all. Every object carries the chart's
// version, so that a new version changes every object.
func fleetChart(opts Options, version string) *chart.Chart {
	c := &chart.Chart{Metadata: &chart.Metadata{
		APIVersion: chart.APIVersionV2, Name: helmChartName, Version: version, AppVersion: version, Type: "application",
		Description: "generated by flotilla-bench fleet --helm",
	}}
	values := "cluster: unknown\nreplicas: 1\nregion: nowhere\nimage: {repository: registry.invalid/fleet-app, tag: \"" + version + "\"}\n"
	c.Raw = append(c.Raw, &chart.File{Name: "values.yaml", Data: []byte(values)})
	_ = yaml.Unmarshal([]byte(values), &c.Values)
	c.Templates = append(c.Templates, &chart.File{Name: "templates/_helpers.tpl", Data: []byte(`{{- define "app.fullname" -}}{{ .Release.Name }}-{{ .Chart.Name }}{{- end -}}
{{- define "app.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.Version | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}
`)})
	c.Templates = append(c.Templates, &chart.File{Name: "templates/deployment.yaml", Data: []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "app.fullname" . }}
  labels: {{- include "app.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.replicas | int }}
  selector:
    matchLabels: {app.kubernetes.io/instance: {{ .Release.Name }}}
  template:
    metadata:
      labels: {{- include "app.labels" . | nindent 8 }}
    spec:
      containers:
        - name: app
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
          env:
            - {name: CLUSTER, value: {{ .Values.cluster | quote }}}
            - {name: REGION, value: {{ .Values.region | quote }}}
`)})
	c.Templates = append(c.Templates, &chart.File{Name: "templates/service.yaml", Data: []byte(`apiVersion: v1
kind: Service
metadata:
  name: {{ include "app.fullname" . }}
  labels: {{- include "app.labels" . | nindent 4 }}
spec:
  selector: {app.kubernetes.io/instance: {{ .Release.Name }}}
  ports: [{port: 80, targetPort: 8080}]
`)})
	for i := range max(opts.Objects-2, 0) {
		var b strings.Builder
		fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"app.fullname\" . }}-config-%02d\n  labels: {{- include \"app.labels\" . | nindent 4 }}\ndata:\n  cluster: {{ .Values.cluster | quote }}\n  replicas: {{ .Values.replicas | quote }}\n  settings: |\n", i)
		for line := 0; b.Len() < opts.ObjectSize; line++ {
			fmt.Fprintf(&b, "    service.%03d.endpoint=svc-%03d.{{ .Release.Namespace }}.{{ .Values.cluster }}:%d\n", line, line, 1024+line*7+i)
		}
		c.Templates = append(c.Templates, &chart.File{Name: fmt.Sprintf("templates/config-%02d.yaml", i), Data: []byte(b.String())})
	}
	return c
}

// writeHelmFleet writes the fleet configuration: the chart source and opts.Releases releases
// of the chart, each in its namespace, with per-cluster values.
func writeHelmFleet(opts Options, fleetDir, repoURL string) error {
	if err := os.MkdirAll(fleetDir, 0o755); err != nil {
		return fmt.Errorf("fleet simulator: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  helm: {repository: %q, chart: %s, version: ">=1.0.0"}
  interval: %s
`, repoURL, helmChartName, opts.SourceInterval)
	for r := range opts.Releases {
		fmt.Fprintf(&b, `---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: %[1]s}
spec:
  source: apps
  targets: [{selector: {matchLabels: {sim: "true"}}}]
  namespace: %[1]s
  createNamespace: true
  prune: true
  interval: %[2]s
  helm:
    values:
      cluster: ${cluster_name}
      replicas: ${cluster_label_replicas}
      region: ${cluster_label_region}
`, releaseName(r), opts.DriftInterval)
	}
	if err := os.WriteFile(filepath.Join(fleetDir, "fleet.yaml"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("fleet simulator: write fleet configuration: %w", err)
	}
	return nil
}

// runHelm is Run in the Helm mode: wave 1 syncs chart version 1.0.0, wave 2 publishes 1.1.0
// (every object changes) and waits until every cluster applied it.
func runHelm(ctx context.Context, opts Options) (*Report, error) {
	raiseFileLimit()
	log := opts.Logger
	rep := &Report{Spokes: SpokesNote, Shape: Shape{
		Clusters: opts.Clusters, Releases: opts.Releases, ObjectsPerRelease: opts.Objects, ObjectSize: opts.ObjectSize,
		Payload: "helm chart", ReportIntervalSeconds: opts.ReportInterval.Seconds(),
		Assignments: opts.Clusters * opts.Releases, Objects: int64(opts.Clusters) * int64(opts.Releases) * int64(opts.Objects),
	}}
	cr, err := startChartRepo(opts)
	if err != nil {
		return nil, err
	}
	defer cr.close()
	hr := &HelmReport{Chart: helmChartName, Templates: opts.Objects, Repository: cr.url}
	rep.Helm = hr
	revisions := make([]string, 2)
	if revisions[0], err = cr.publish("1.0.0"); err != nil {
		return nil, err
	}
	hr.Versions = append(hr.Versions, "1.0.0")
	fleetDir := filepath.Join(opts.Dir, "fleet")
	if err := writeHelmFleet(opts, fleetDir, cr.url); err != nil {
		return nil, err
	}
	joins := strconv.Itoa(max(opts.Clusters, 20))
	hubArgs := append([]string{"--fleet-interval", "2s", "--join-qps", joins, "--join-burst", joins}, opts.HubArgs...)
	pprofAddr := ""
	if opts.HubProfile != "" {
		if pprofAddr, err = freeLoopbackAddr(); err != nil {
			return nil, err
		}
		hubArgs = append(hubArgs, "--pprof-addr", pprofAddr)
	}
	hub := newHubProc(opts.Binary, filepath.Join(opts.Dir, "hub"), fleetDir, hubArgs)
	// The hub trusts the repository's CA as an operator's would be told to: SSL_CERT_FILE.
	hub.env = []string{"SSL_CERT_FILE=" + cr.caFile}
	if err := hub.start(ctx); err != nil {
		return nil, err
	}
	defer hub.kill()
	api, err := hub.client()
	if err != nil {
		return nil, err
	}
	log.Info("hub started; registering and joining clusters", "clusters", opts.Clusters, "chart repository", cr.url)
	fleet, err := joinFleet(ctx, opts, hub.agentURL(), api, filepath.Join(opts.Dir, "agents"), opts.Clusters)
	if err != nil {
		return nil, err
	}
	agentCtx, stopAgents := context.WithCancel(ctx)
	defer stopAgents()
	probe := waveProbe{pid: hub.pid(), meter: &fleet.meter, clusters: fleet.clusters}
	profiled := make(chan error, 1)
	w, err := probe.measure(ctx, "wave 1", revisions[0], opts.Timeout, func() error {
		if pprofAddr != "" {
			go func() { profiled <- profileHub(ctx, pprofAddr, opts.HubProfileFor, opts.HubProfile) }()
		} else {
			profiled <- nil
		}
		fleet.run(agentCtx)
		return nil
	}, func(ctx context.Context) error { return waitSynced(ctx, api, opts, revisions[0]) })
	if err != nil {
		return nil, fmt.Errorf("pull wave 1 (chart 1.0.0): %w", err)
	}
	if err := <-profiled; err != nil {
		log.Warn("hub profile not recorded", "error", err)
	}
	rep.Pull = append(rep.Pull, w)
	log.Info("pull wave 1 converged", "seconds", w.ConvergedSeconds)
	w, err = probe.measure(ctx, "wave 2", "", opts.Timeout, func() error {
		rev, err := cr.publish("1.1.0")
		revisions[1] = rev
		return err
	}, func(ctx context.Context) error { return waitSynced(ctx, api, opts, revisions[1]) })
	if err != nil {
		return nil, fmt.Errorf("pull wave 2 (chart 1.1.0): %w", err)
	}
	w.Commit = revisions[1]
	rep.Pull = append(rep.Pull, w)
	hr.Versions = append(hr.Versions, "1.1.0")
	log.Info("pull wave 2 converged", "seconds", w.ConvergedSeconds)
	stopAgents()
	fleet.wait()
	if err := hub.stop(); err != nil {
		log.Warn("stop hub", "error", err)
	}
	hr.RepositoryRequests, hr.RepositoryBytes = cr.requests.Load(), cr.bytes.Load()
	return rep, nil
}

// selfSignedLoopback makes a certificate for 127.0.0.1 that is its own CA, and its PEM.
func selfSignedLoopback() (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "fleet simulator chart repository"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
