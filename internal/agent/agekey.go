package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/validate/content"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/desired"
	"github.com/flotilla/flotilla/internal/secrets"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// ageKeyFile is the cluster's age identity in the state dir, in age-keygen's format (so an
// operator can hand it to sops as SOPS_AGE_KEY_FILE to recover). It is the only copy: only
// its recipient is ever sent, to the hub, and nothing logs it.
const ageKeyFile = "age.key"

// loadOrCreateAgeKey returns the cluster's age key, generating it on first use: at the join,
// or at the first start of an agent that joined before agents had one.
func loadOrCreateAgeKey(dir string) (secrets.Key, error) {
	path := filepath.Join(dir, ageKeyFile)
	data, err := os.ReadFile(path)
	if err == nil {
		k, err := secrets.ParseIdentity(data)
		if err != nil {
			return secrets.Key{}, fmt.Errorf("%s: %w", path, err)
		}
		// Whatever loosened it, the key is readable by this user only.
		if err := os.Chmod(path, 0o600); err != nil {
			return secrets.Key{}, fmt.Errorf("%s: %w", path, err)
		}
		return k, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return secrets.Key{}, fmt.Errorf("age key: %w", err)
	}
	k, err := secrets.NewKey()
	if err != nil {
		return secrets.Key{}, err
	}
	if err := writePrivate(path, secrets.FormatIdentity(k)); err != nil {
		return secrets.Key{}, fmt.Errorf("age key: %w", err)
	}
	return k, nil
}

// writePrivate writes data to path with mode 0600 atomically: a crash leaves the old file or
// the new one, never a half-written key.
func writePrivate(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".age-key-*") // mode 0600
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	if _, err := f.Write(data); err != nil {
		_ = f.Close() // already failing: the first error is the one returned
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close() // already failing: the first error is the one returned
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// projectKeyDir holds one age identity per project other than the platform that delivers to
// the cluster, <project>.key, in age-keygen's format like ageKeyFile (which stays the
// platform's key, so ciphertext made before keys per project still decrypts for platform
// releases). A release decrypts only with its own project's key, so one team's ciphertext
// (or the platform's) copied into another team's repository does not decrypt there.
const projectKeyDir = "age-projects"

// maxProjectKeys bounds the keys an agent creates: one per project that delivers to the
// cluster, far below it.
const maxProjectKeys = 1024

// projectKeys are the agent's per-project age keys, created when it first sees an assignment
// of the project.
type projectKeys struct {
	dir      string
	platform secrets.Key

	mu   sync.Mutex
	keys map[string]secrets.Key
}

// loadProjectKeys reads the project keys in dir's projectKeyDir; platform is the cluster key.
func loadProjectKeys(dir string, platform secrets.Key) (*projectKeys, error) {
	pk := &projectKeys{dir: filepath.Join(dir, projectKeyDir), platform: platform, keys: map[string]secrets.Key{}}
	entries, err := os.ReadDir(pk.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return pk, nil
	}
	if err != nil {
		return nil, fmt.Errorf("project age keys: %w", err)
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".key")
		if !ok || e.IsDir() || checkProjectName(name) != nil {
			continue // a temporary file of an interrupted write, or not ours
		}
		path := filepath.Join(pk.dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("project age key: %w", err)
		}
		k, err := secrets.ParseIdentity(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		pk.keys[name] = k
	}
	return pk, nil
}

// checkProjectName refuses a project name that is not a DNS label: it names a file.
func checkProjectName(name string) error {
	if msgs := content.IsDNS1123Label(name); len(msgs) > 0 {
		return fmt.Errorf("project name %q: not a DNS label: %s", name, strings.Join(msgs, "; "))
	}
	return nil
}

// get returns project's key, creating and saving it on first use; created says it did.
func (pk *projectKeys) get(project string) (k secrets.Key, created bool, err error) {
	if project = v1alpha1.ProjectOrPlatform(project); project == v1alpha1.ProjectPlatform {
		return pk.platform, false, nil
	}
	if err := checkProjectName(project); err != nil {
		return secrets.Key{}, false, err
	}
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if k, ok := pk.keys[project]; ok {
		return k, false, nil
	}
	if len(pk.keys) >= maxProjectKeys {
		return secrets.Key{}, false, fmt.Errorf("project %s: the agent holds %d project age keys, at most %d", project, len(pk.keys), maxProjectKeys)
	}
	if k, err = secrets.NewKey(); err != nil {
		return secrets.Key{}, false, err
	}
	if err := os.MkdirAll(pk.dir, 0o700); err != nil {
		return secrets.Key{}, false, fmt.Errorf("project %s: age key: %w", project, err)
	}
	if err := writePrivate(filepath.Join(pk.dir, project+".key"), secrets.FormatIdentity(k)); err != nil {
		return secrets.Key{}, false, fmt.Errorf("project %s: age key: %w", project, err)
	}
	pk.keys[project] = k
	return k, true, nil
}

// recipients are the public halves of the project keys, by project name.
func (pk *projectKeys) recipients() []*agentv1.ProjectAgeRecipient {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	out := make([]*agentv1.ProjectAgeRecipient, 0, len(pk.keys))
	for name, k := range pk.keys {
		out = append(out, &agentv1.ProjectAgeRecipient{Project: name, Recipient: k.Recipient})
	}
	slices.SortFunc(out, func(a, b *agentv1.ProjectAgeRecipient) int { return strings.Compare(a.Project, b.Project) })
	return out
}

// ensure creates the keys of the projects ds assigns releases of that the agent has none of
// yet, so that the hub learns their recipients before a team encrypts anything; created
// says whether any was.
func (pk *projectKeys) ensure(ds desired.State) (created bool, err error) {
	var errs []error
	for i := range ds.Assignments {
		_, c, err := pk.get(projectName(&ds.Assignments[i]))
		if err != nil {
			errs = append(errs, err)
		}
		created = created || c
	}
	return created, errors.Join(errs...)
}
