package image

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestDeployNamesTheImage checks that the kustomizations under deploy/ pull the repository
// this package builds for, so that `make image` and the manifests agree on a name: the hub's
// image for hubs, the agent's own for agents.
func TestDeployNamesTheImage(t *testing.T) {
	t.Parallel()
	for dir, want := range map[string]struct{ name, repo string }{
		"hub": {"flotilla", Repository}, "hub-ha": {"flotilla", Repository}, "agent": {"flotilla-agent", AgentRepository},
	} {
		data, err := os.ReadFile(filepath.Join("..", "..", "deploy", dir, "kustomization.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var k struct {
			Images []struct {
				Name    string `json:"name"`
				NewName string `json:"newName"`
				NewTag  string `json:"newTag"`
			} `json:"images"`
		}
		if err := yaml.Unmarshal(data, &k); err != nil {
			t.Fatalf("deploy/%s/kustomization.yaml: %v", dir, err)
		}
		found := false
		for _, im := range k.Images {
			if im.Name == want.name {
				found = true
				if im.NewName != want.repo || im.NewTag == "" {
					t.Errorf("deploy/%s pulls %s:%s, want %s:VERSION", dir, im.NewName, im.NewTag, want.repo)
				}
			}
		}
		if !found {
			t.Errorf("deploy/%s/kustomization.yaml does not set the %s image", dir, want.name)
		}
		if RepositoryFor(want.name) != want.repo {
			t.Errorf("RepositoryFor(%s) = %s, want %s", want.name, RepositoryFor(want.name), want.repo)
		}
	}
}
