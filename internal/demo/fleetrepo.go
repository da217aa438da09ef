package demo

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// exampleFleet is the demo's fleet repository: the fleet configuration under fleet/ and the
// manifests it delivers under apps/, in one repository the user edits and commits to.
func exampleFleet(repoURL string) map[string]string {
	return map[string]string{
		"README.md": `# Demo fleet

fleet/ holds the fleet configuration the hub reads (Source and Release objects); apps/ holds
the manifests the releases deliver. Edit, commit, and watch it converge with flotilla status.
`,
		"fleet/sources.yaml": fmt.Sprintf(`apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata:
  name: demo
spec:
  git:
    url: %s
    branch: main
  interval: 5s
`, repoURL),
		"fleet/releases.yaml": `# Every cluster gets the baseline of its region.
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata:
  name: baseline
spec:
  source: demo
  path: "apps/baseline/{{ .Cluster.Labels.region }}"
  targets:
    - selector: {}
  namespace: platform-system
  createNamespace: true
  prune: true
  interval: 1m
---
# Production clusters greet by name (variables substituted per cluster).
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata:
  name: greeter
spec:
  source: demo
  path: apps/greeter
  targets:
    - selector: {matchLabels: {env: prod}}
  namespace: greeter
  createNamespace: true
  prune: true
  variables:
    greeting: Hello
  interval: 1m
---
# Staging only.
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata:
  name: staging-tools
spec:
  source: demo
  path: apps/staging-tools
  targets:
    - selector: {matchLabels: {env: staging}}
  namespace: staging-tools
  createNamespace: true
  prune: true
  interval: 1m
`,
		"apps/baseline/eu/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: platform-settings
data:
  region: eu
  dataResidency: eu-only
  logEndpoint: https://logs.eu.example.com
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: platform-agent
`,
		"apps/baseline/us/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: platform-settings
data:
  region: us
  dataResidency: none
  logEndpoint: https://logs.us.example.com
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: platform-agent
`,
		"apps/greeter/greeter.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: greeter
data:
  message: "${greeting}, ${cluster_name} in ${cluster_label_region:=somewhere}!"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: greeter
spec:
  replicas: 2
  selector: {matchLabels: {app: greeter}}
  template:
    metadata: {labels: {app: greeter}}
    spec:
      containers:
        - name: greeter
          image: nginx:1.27
`,
		"apps/staging-tools/debug.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: debug-settings
data:
  logLevel: debug
`,
	}
}

// createFleetRepo makes a Git work tree at dir with the example fleet committed on main.
func createFleetRepo(dir string) error {
	repoURL := "file://" + dir
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: "refs/heads/main"},
	})
	if err != nil {
		return fmt.Errorf("fleet repository %s: %w", dir, err)
	}
	// A committer identity in the repository itself, so that the README's `git commit` works
	// on a fresh machine where git has none configured.
	cfg, err := repo.Config()
	if err != nil {
		return err
	}
	cfg.User.Name, cfg.User.Email = "Flotilla demo user", "demo@flotilla.dev"
	if err := repo.SetConfig(cfg); err != nil {
		return fmt.Errorf("fleet repository %s: %w", dir, err)
	}
	for name, content := range exampleFleet(repoURL) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	wt, err := repo.Worktree()
	if err != nil {
		return err
	}
	if err := wt.AddGlob("."); err != nil {
		return err
	}
	_, err = wt.Commit("Example fleet", &git.CommitOptions{Author: &object.Signature{Name: "Flotilla demo", Email: "demo@flotilla.dev", When: time.Now()}})
	return err
}
