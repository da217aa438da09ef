package image

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestDeployNamesTheImage checks that the kustomizations under deploy/ pull the repository
// this package builds for, so that `make image` and the manifests agree on a name.
func TestDeployNamesTheImage(t *testing.T) {
	for _, dir := range []string{"hub", "hub-ha", "agent"} {
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
			if im.Name == "flotilla" {
				found = true
				if im.NewName != Repository || im.NewTag == "" {
					t.Errorf("deploy/%s pulls %s:%s, want %s:VERSION", dir, im.NewName, im.NewTag, Repository)
				}
			}
		}
		if !found {
			t.Errorf("deploy/%s/kustomization.yaml does not set the flotilla image", dir)
		}
	}
}
