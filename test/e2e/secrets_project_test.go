package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla/flotilla/internal/cli"
	"github.com/flotilla/flotilla/internal/eventually"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/secrets/sopstest"
)

const projectSecretsFleet = `apiVersion: flotilla.dev/v1alpha1
kind: Source
metadata: {name: apps}
spec:
  git: {url: "file://%s", branch: main}
  interval: 1h
---
apiVersion: flotilla.dev/v1alpha1
kind: Project
metadata: {name: team-a}
spec:
  sources: [apps]
  namespaces: [team-a]
  serviceAccount: {namespace: flotilla-tenants, name: team-a}
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: platform-db}
spec:
  source: apps
  path: platform
  targets: [{selector: {}}]
  namespace: vault
  createNamespace: true
  interval: 1s
  decryption: {provider: sops}
---
apiVersion: flotilla.dev/v1alpha1
kind: Release
metadata: {name: team-a-web}
spec:
  project: team-a
  source: apps
  path: team
  targets: [{selector: {}}]
  namespace: team-a
  selfHeal: false
  interval: 1s
  decryption: {provider: sops}
`

// teamTenancy is what the platform gives team-a: its namespace, and the ServiceAccount the
// agent applies team-a's releases as, with rights to Secrets and ConfigMaps there.
const teamTenancy = `apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: flotilla-tenants}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: team-a, namespace: flotilla-tenants}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: deployer, namespace: team-a}
rules: [{apiGroups: [""], resources: [configmaps, secrets], verbs: [get, list, watch, create, update, patch, delete]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: deployer, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: deployer}
subjects: [{kind: ServiceAccount, name: team-a, namespace: flotilla-tenants}]
`

// TestSecretsKeysPerProject: the agent makes a key for project team-a when it is first
// assigned one of its releases, and the hub shows its recipient beside the cluster's own.
// The platform's Secret (encrypted as before, for the cluster key) and team-a's own (encrypted
// with --project team-a) are both delivered; a ConfigMap encrypted for team-a and changed by
// hand shows in the drift view with its values redacted. Then team-a copies the platform's
// ciphertext byte for byte into its own path, where the release's namespace moves it into
// team-a: the revision fails saying it is not encrypted for project team-a's key, and nothing
// of it is applied.
func TestSecretsKeysPerProject(t *testing.T) {
	t.Parallel()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	platformPW, teamPW, teamSetting := "pw-"+hex.EncodeToString(b), "team-"+hex.EncodeToString(b), "cfg-"+hex.EncodeToString(b)

	repoDir := t.TempDir()
	rp := newRepo(t, repoDir, map[string]string{
		"fleet/fleet.yaml":       fmt.Sprintf(projectSecretsFleet, repoDir),
		"platform/settings.yaml": settingsConfigMap("v1"),
		"platform/tenancy.yaml":  teamTenancy,
		"team/settings.yaml":     settingsConfigMap("v1"),
	})
	f := newFleet(t, "file://"+repoDir, map[string]map[string]string{"sa-1": {"env": "prod"}})
	f.waitStatus("v1 applied", 2*time.Minute, converged("", map[string][]string{"sa-1": {"platform-db", "team-a-web"}}))

	conn := []string{"--hub", f.hub.APIURL(), "--token", f.hub.AdminToken(), "--ca", f.hub.CAPath()}
	flotilla := func(args ...string) (string, string, int) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := cli.Run(t.Context(), args, &out, &errOut)
		return out.String(), errOut.String(), code
	}
	mustFlotilla := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, code := flotilla(args...)
		if code != 0 {
			t.Fatalf("flotilla %s: exit %d: %s%s", strings.Join(args, " "), code, out, errOut)
		}
		return out, errOut
	}

	// No key of a project never assigned there: encrypt says so.
	work := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(work, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plainPlatform := write("db.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\ntype: Opaque\nstringData:\n  password: "+platformPW+"\n")
	if _, errOut, code := flotilla(append([]string{"secret", "encrypt", "--project", "team-b", "--selector", "env=prod", plainPlatform}, conn...)...); code == 0 ||
		!strings.Contains(errOut, "cluster sa-1: no age key of project team-b yet") {
		t.Errorf("encrypt --project team-b: exit %d, %q; want a refusal naming sa-1 and team-b", code, errOut)
	}

	// The hub shows team-a's key on sa-1, beside the cluster's own.
	var view hubclient.ClusterView
	eventually.Within(t, time.Minute, eventually.True("team-a's recipient on sa-1", func() bool {
		out, _ := mustFlotilla(append([]string{"get", "clusters", "-o", "json"}, conn...)...)
		var cs []hubclient.ClusterView
		if err := json.Unmarshal([]byte(out), &cs); err != nil || len(cs) != 1 {
			return false
		}
		view = cs[0]
		return strings.HasPrefix(view.ProjectAgeRecipients["team-a"], "age1")
	}))
	if view.ProjectAgeRecipients["team-a"] == view.AgeRecipient {
		t.Fatalf("team-a's key is the cluster's own: %s", view.AgeRecipient)
	}
	if show, _ := mustFlotilla(append([]string{"cluster", "show", "sa-1"}, conn...)...); !strings.Contains(show, "Age recipient (project team-a):") {
		t.Errorf("cluster show does not print team-a's recipient:\n%s", show)
	}

	// The platform encrypts as before; team-a with --project team-a.
	platformEnc, _ := mustFlotilla(append([]string{"secret", "encrypt", "--selector", "env=prod", plainPlatform}, conn...)...)
	teamEnc, said := mustFlotilla(append([]string{"secret", "encrypt", "--project", "team-a", "--selector", "env=prod",
		write("own.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: own}\ntype: Opaque\nstringData:\n  password: "+teamPW+"\n")}, conn...)...)
	if !strings.Contains(said, "(project team-a's keys)") {
		t.Errorf("encrypt --project team-a says %q", said)
	}
	// A ConfigMap the sops CLI encrypted for team-a's key.
	teamCM := sopstest.Run(t, nil, "--encrypt", "--age", view.ProjectAgeRecipients["team-a"], "--encrypted-regex", "^(data|stringData)$",
		write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tuned}\ndata:\n  setting: "+teamSetting+"\n"))
	commit := rp.commit("secrets", map[string]string{"platform/db.yaml": platformEnc, "team/own.yaml": teamEnc, "team/cm.yaml": string(teamCM)})
	f.waitStatus("both delivered", 2*time.Minute, converged(commit, map[string][]string{"sa-1": {"platform-db", "team-a-web"}}))

	kc := kubernetes.NewForConfigOrDie(f.clusters["sa-1"].RESTConfig()).CoreV1()
	for _, s := range []struct{ ns, name, want string }{{"vault", "db", platformPW}, {"team-a", "own", teamPW}} {
		sec, err := kc.Secrets(s.ns).Get(t.Context(), s.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(sec.Data["password"]) != s.want {
			t.Errorf("secret %s/%s holds %q, want the plaintext", s.ns, s.name, sec.Data["password"])
		}
	}
	if v, _ := configMapData(t, f.clusters["sa-1"], "team-a", "tuned", "setting"); v != teamSetting {
		t.Errorf("configmap team-a/tuned holds %q, want the plaintext", v)
	}

	// The decrypted ConfigMap changed by hand: its drift carries no value.
	if out, err := f.clusters["sa-1"].Kubectl(t.Context(), nil, "-n", "team-a", "patch", "configmap/tuned", "--type=merge",
		`-p={"data":{"setting":"by-hand"}}`); err != nil {
		t.Fatalf("kubectl patch: %v\n%s", err, out)
	}
	eventually.Within(t, time.Minute, eventually.True("drift on configmap/tuned", func() bool {
		v, err := f.client.Drift(t.Context(), hubclient.DriftFilter{Cluster: "sa-1", Release: "team-a-web"})
		if err != nil {
			return false
		}
		for _, o := range v.Objects {
			for _, fd := range o.Fields {
				if o.Object == "configmap/tuned" && fd.Path == ".data.setting" {
					if fd.Desired != "(redacted)" || fd.Live != "(redacted)" {
						t.Errorf("drift on configmap/tuned carries values: desired %q live %q", fd.Desired, fd.Live)
					}
					return true
				}
			}
		}
		return false
	}))

	// The attack: the platform's ciphertext, byte for byte, in team-a's path.
	attack := rp.commit("steal", map[string]string{"team/stolen.yaml": platformEnc, "team/settings.yaml": settingsConfigMap("v2")})
	st := f.waitStatus("the stolen secret refused", 2*time.Minute, func(st hubclient.StatusView) bool {
		for _, a := range st.Assignments {
			if a.Release == "team-a-web" && containsCommit(a.DesiredRevision, attack) && a.Error != "" {
				return true
			}
		}
		return false
	})
	for _, a := range st.Assignments {
		if a.Release == "team-a-web" {
			if want := "render team/stolen.yaml: document 1: not encrypted for project team-a's key on cluster sa-1"; !strings.Contains(a.Error, want) {
				t.Errorf("team-a-web's error %q does not contain %q", a.Error, want)
			}
		}
	}
	if _, err := kc.Secrets("team-a").Get(t.Context(), "db", metav1.GetOptions{}); err == nil {
		t.Error("team-a has the platform's Secret db")
	}
	if v, _ := configMapData(t, f.clusters["sa-1"], "team-a", "settings", "version"); v != "v1" {
		t.Errorf("team-a's ConfigMap is at %q, want v1: a failed render applies nothing", v)
	}
}
