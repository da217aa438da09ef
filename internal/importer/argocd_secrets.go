package importer

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// credential is what the importer keeps of an Argo CD repository Secret: where it applies and
// the name Sources use for it. Never a value of the Secret but its url.
type credential struct {
	name   string
	url    string // normalized, without credentials
	prefix bool   // repo-creds: applies to every URL under url
	host   string
}

// secretField returns a non-secret key of a Secret (url, type, name, server, project) from
// stringData or data; never call it for a key that holds a secret.
func secretField(o *Object, key string) string {
	if s, ok := lookup(o.m, "stringData."+key).(string); ok {
		return s
	}
	if s, ok := lookup(o.m, "data."+key).(string); ok {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			return string(b)
		}
	}
	return ""
}

// secretKeys lists the keys of a Secret, sorted, without values.
func secretKeys(o *Object) []string {
	var keys []string
	for _, f := range []string{"data", "stringData"} {
		if m, ok := lookup(o.m, f).(map[string]any); ok {
			keys = append(keys, sortedKeys(m)...)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// credentialMethod says which credentials file keys the Secret's keys correspond to.
func credentialMethod(keys []string) (string, bool) {
	switch {
	case slices.Contains(keys, "sshPrivateKey"):
		return "sshPrivateKey: (the key, a path or inline PEM) and sshKnownHosts:", true
	case slices.Contains(keys, "githubAppPrivateKey"):
		return "a GitHub App is not a Flotilla credentials method: use a token: (a fine-grained personal access token or an installation token)", false
	case slices.Contains(keys, "bearerToken"):
		return "token:", true
	case slices.Contains(keys, "password"):
		return "username: and password:", true
	}
	return "token:, username: and password:, or sshPrivateKey:", true
}

// normalRepoURL is a repository URL as credentials match it: scheme and host in lower case,
// no user information, no trailing "/" or ".git"; scp-like "git@host:org/repo" becomes
// ssh://host/org/repo.
func normalRepoURL(raw string) (norm, host string) {
	raw = strings.TrimSpace(raw)
	if !strings.Contains(raw, "://") {
		if h, p, ok := strings.Cut(raw, ":"); ok && !strings.HasPrefix(raw, "/") {
			if i := strings.LastIndex(h, "@"); i >= 0 {
				h = h[i+1:]
			}
			raw = "ssh://" + h + "/" + strings.TrimPrefix(p, "/")
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return strings.TrimSuffix(strings.TrimSuffix(raw, "/"), ".git"), ""
	}
	u.User = nil
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	s := strings.TrimSuffix(strings.TrimSuffix(u.String(), "/"), ".git")
	return s, u.Hostname()
}

// stripUserinfo removes user information from a URL, so that "https://user:pass@host/x"
// never reaches the output.
func stripUserinfo(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil || !strings.Contains(raw, "://") {
		return raw, false
	}
	if _, hasPassword := u.User.Password(); !hasPassword && u.Scheme == "ssh" {
		return raw, false // an ssh URL's git@ is the SSH user name, not a secret
	}
	u.User = nil
	return u.String(), true
}

// secrets converts Argo CD's repository, repo-creds and cluster Secrets into credential names
// and report lines. Every other Secret is reported as not read.
func (a *argo) secret(o *Object) {
	o.markUsed("data", "stringData", "type")
	secretLabels, _ := lookup(o.m, "metadata.labels").(map[string]any)
	typ, _ := secretLabels["argocd.argoproj.io/secret-type"].(string)
	keys := secretKeys(o)
	switch typ {
	case "repository", "repo-creds":
		raw := secretField(o, "url")
		if raw == "" {
			a.find(o, LeftOut, "stringData.url", "repository Secret without a url: not converted", "")
			return
		}
		norm, host := normalRepoURL(raw)
		if kind := secretField(o, "type"); kind == "helm" || secretField(o, "enableOCI") == "true" {
			a.find(o, LeftOut, "stringData.type", fmt.Sprintf("credentials for Helm or OCI repository %s: Flotilla sources are Git repositories only, so nothing uses them", norm), "keep them until Helm sources arrive (a later release)")
			return
		}
		c := credential{url: norm, prefix: typ == "repo-creds", host: host}
		c.name = a.names.assign("Credentials", host, nil, nil, "")
		a.creds = append(a.creds, c)
		method, ok := credentialMethod(keys)
		scope := "repository " + norm
		if c.prefix {
			scope = "every repository under " + norm
		}
		level := Action
		if !ok {
			level = LeftOut
		}
		a.find(o, level, "", fmt.Sprintf("%s Secret for %s: Sources that use it name credentials %q; the Secret's values were not read or copied", typ, scope, c.name),
			fmt.Sprintf("write a credentials file with %s for %s and add to the hub's --credentials-config: credentials: {%s: {file: %s.creds, hosts: [%s]}} (docs/credentials.md)", method, host, c.name, c.name, host))
		if p := secretField(o, "project"); p != "" {
			a.find(o, Note, "stringData.project", fmt.Sprintf("scoped to Argo CD project %q: Flotilla credentials are scoped by host, by the hub's operator", p), "")
		}
	case "cluster":
		name, server := secretField(o, "name"), secretField(o, "server")
		value := a.clusterLabel(name, server)
		cmd := fmt.Sprintf("flotilla cluster add %s -l %s=%s", sanitize(name, "cluster"), ClusterLabel, value)
		labels, _ := lookup(o.m, "metadata.labels").(map[string]any)
		for _, k := range sortedKeys(labels) {
			if v, ok := labels[k].(string); ok && k != "argocd.argoproj.io/secret-type" {
				cmd += fmt.Sprintf(" -l %s=%s", k, v)
			}
		}
		a.find(o, Action, "", fmt.Sprintf("Argo CD cluster %q (%s): a Flotilla cluster joins the hub through its own agent, so the Secret's credentials are not needed and were not read", name, server),
			fmt.Sprintf("register it with its labels, then run the agent there (docs/agent.md): %s", cmd))
	default:
		a.find(o, Note, "", fmt.Sprintf("Secret with %d keys and no argocd.argoproj.io/secret-type repository, repo-creds or cluster label: not read", len(keys)), "")
	}
}

// credentialsFor returns the credentials name for a repository URL: a repository Secret for
// that URL, else the repo-creds with the longest matching prefix, as Argo CD chooses.
func (a *argo) credentialsFor(repoURL string) string {
	norm, _ := normalRepoURL(repoURL)
	best, bestLen := "", -1
	for _, c := range a.creds {
		switch {
		case !c.prefix && c.url == norm:
			return c.name
		case c.prefix && strings.HasPrefix(norm, c.url) && len(c.url) > bestLen:
			best, bestLen = c.name, len(c.url)
		}
	}
	return best
}
