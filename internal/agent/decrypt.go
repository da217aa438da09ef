package agent

import (
	"fmt"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/render"
	"github.com/flotilla/flotilla/internal/secrets"
)

// decryptor decrypts the assignment's SOPS documents when its release asks for decryption,
// with its own project's age key only: the cluster's key for the platform, the project's for
// a team (agekey.go). So a team that copies the platform's ciphertext, or another team's,
// into its repository gets an error naming its project, and nothing of that release is
// applied. nil when the release asks for no decryption (encrypted documents are then
// refused).
func (a *Agent) decryptor(as *desired.Assignment) (render.Decryptor, error) {
	switch p := as.Decryption; p {
	case "":
		return nil, nil
	case "sops":
		project := projectName(as)
		if project == v1alpha1.ProjectPlatform {
			return secrets.NewDecryptor("cluster "+a.id.Cluster, a.age.Identity)
		}
		k, created, err := a.projectKeys.get(project)
		if err != nil {
			return nil, fmt.Errorf("release %s: %w", as.Release, err)
		}
		if created {
			a.heartbeatNow()
		}
		return secrets.NewDecryptor(fmt.Sprintf("project %s's key on cluster %s", project, a.id.Cluster), k.Identity)
	default:
		return nil, fmt.Errorf("release %s: decryption provider %q: this agent knows only \"sops\"", as.Release, p)
	}
}
