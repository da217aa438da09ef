package agent

import (
	"fmt"

	"github.com/flotilla/flotilla/internal/agent/render"
	"github.com/flotilla/flotilla/internal/secrets"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// decryptor decrypts the assignment's SOPS documents with the cluster's own age key when its
// release asks for decryption; nil otherwise (encrypted documents are then refused).
func (a *Agent) decryptor(as *agentv1.Assignment) (render.Decryptor, error) {
	switch p := as.GetDecryption(); p {
	case "":
		return nil, nil
	case "sops":
		return secrets.NewDecryptor("cluster "+a.id.Cluster, a.age.Identity)
	default:
		return nil, fmt.Errorf("release %s: decryption provider %q: this agent knows only \"sops\"", as.GetRelease(), p)
	}
}
