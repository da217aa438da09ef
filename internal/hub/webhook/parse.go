package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Kind is what an event asks of the hub.
type Kind string

const (
	// KindPush: a branch or a tag moved; poll the sources that follow it.
	KindPush Kind = "push"
	// KindPing: the provider checks the endpoint (GitHub's ping); answer, poll nothing.
	KindPing Kind = "ping"
	// KindIgnored: an event the hub does not act on (an issue, a merge request).
	KindIgnored Kind = "ignored"
)

// Event is what a provider's delivery says.
type Event struct {
	Kind Kind
	// Name is the provider's name of the event ("push", "Tag Push Hook").
	Name string
	// URLs are the repository's URLs as the payload gives them (clone, SSH, web).
	URLs []string
	// Ref is what moved: Branch for a branch, Tag for a tag; both empty (generic provider
	// only): every source of the repository.
	Branch, Tag string
}

// ErrPayload is what every refusal of a payload wraps: the caller answers 400.
var ErrPayload = errors.New("webhook payload refused")

// Parse reads a verified delivery of p.
func Parse(p Provider, h http.Header, body []byte) (Event, error) {
	switch p {
	case GitHub:
		return parseGitHub(h.Get(GitHubEvent), body)
	case GitLab:
		return parseGitLab(h.Get(GitLabEvent), body)
	case Generic:
		return parseGeneric(body)
	}
	return Event{}, fmt.Errorf("webhook provider %q: unknown: %w", p, ErrPayload)
}

// githubPush is the part of GitHub's push event the hub reads
// (docs.github.com/en/webhooks/webhook-events-and-payloads#push).
type githubPush struct {
	Ref        string `json:"ref"`
	Repository struct {
		CloneURL string `json:"clone_url"`
		SSHURL   string `json:"ssh_url"`
		HTMLURL  string `json:"html_url"`
		GitURL   string `json:"git_url"`
	} `json:"repository"`
}

func parseGitHub(event string, body []byte) (Event, error) {
	switch event {
	case "":
		return Event{}, fmt.Errorf("github webhook: no %s header: %w", GitHubEvent, ErrPayload)
	case "ping":
		return Event{Kind: KindPing, Name: event}, nil
	case "push":
	default:
		return Event{Kind: KindIgnored, Name: event}, nil
	}
	var p githubPush
	if err := json.Unmarshal(body, &p); err != nil {
		return Event{}, fmt.Errorf("github push event: %v: %w", err, ErrPayload)
	}
	r := p.Repository
	return pushEvent("github push event", event, p.Ref, r.CloneURL, r.SSHURL, r.HTMLURL, r.GitURL)
}

// gitlabPush is the part of GitLab's push and tag push events the hub reads
// (docs.gitlab.com/user/project/integrations/webhook_events/#push-events).
type gitlabPush struct {
	ObjectKind string `json:"object_kind"`
	Ref        string `json:"ref"`
	Project    struct {
		GitHTTPURL string `json:"git_http_url"`
		GitSSHURL  string `json:"git_ssh_url"`
		WebURL     string `json:"web_url"`
	} `json:"project"`
	Repository struct {
		GitHTTPURL string `json:"git_http_url"`
		GitSSHURL  string `json:"git_ssh_url"`
		Homepage   string `json:"homepage"`
	} `json:"repository"`
}

func parseGitLab(event string, body []byte) (Event, error) {
	switch event {
	case "":
		return Event{}, fmt.Errorf("gitlab webhook: no %s header: %w", GitLabEvent, ErrPayload)
	case "Push Hook", "Tag Push Hook":
	default:
		return Event{Kind: KindIgnored, Name: event}, nil
	}
	var p gitlabPush
	if err := json.Unmarshal(body, &p); err != nil {
		return Event{}, fmt.Errorf("gitlab %s: %v: %w", strings.ToLower(event), err, ErrPayload)
	}
	pr, r := p.Project, p.Repository
	ev, err := pushEvent("gitlab "+strings.ToLower(event), event, p.Ref, pr.GitHTTPURL, pr.GitSSHURL, pr.WebURL, r.GitHTTPURL, r.GitSSHURL, r.Homepage)
	if err == nil && event == "Tag Push Hook" && ev.Tag == "" {
		return Event{}, fmt.Errorf("gitlab tag push hook: ref %q is not a tag: %w", p.Ref, ErrPayload)
	}
	return ev, err
}

// genericPush is the generic provider's body.
type genericPush struct {
	URL    string `json:"url"`
	Branch string `json:"branch"`
	Tag    string `json:"tag"`
}

func parseGeneric(body []byte) (Event, error) {
	var p genericPush
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Event{}, fmt.Errorf(`generic webhook: want {"url": ..., "branch": ...}: %v: %w`, err, ErrPayload)
	}
	if dec.More() {
		return Event{}, fmt.Errorf("generic webhook: more than one JSON document: %w", ErrPayload)
	}
	if p.URL == "" {
		return Event{}, fmt.Errorf("generic webhook: no url: %w", ErrPayload)
	}
	if p.Branch != "" && p.Tag != "" {
		return Event{}, fmt.Errorf("generic webhook: branch %q and tag %q: name one: %w", p.Branch, p.Tag, ErrPayload)
	}
	ev := Event{Kind: KindPush, Name: "push", URLs: []string{p.URL}}
	switch {
	case p.Branch != "":
		ev.Branch = strings.TrimPrefix(p.Branch, "refs/heads/")
	case p.Tag != "":
		ev.Tag = strings.TrimPrefix(p.Tag, "refs/tags/")
	}
	if err := checkRefName(ev.Branch + ev.Tag); err != nil {
		return Event{}, fmt.Errorf("generic webhook: %v: %w", err, ErrPayload)
	}
	return ev, nil
}

// pushEvent builds a push event from a full ref and the repository's URLs (empty ones are
// left out).
func pushEvent(what, name, ref string, urls ...string) (Event, error) {
	ev := Event{Kind: KindPush, Name: name}
	for _, u := range urls {
		if u != "" && !slices.Contains(ev.URLs, u) {
			ev.URLs = append(ev.URLs, u)
		}
	}
	if len(ev.URLs) == 0 {
		return Event{}, fmt.Errorf("%s: no repository URL: %w", what, ErrPayload)
	}
	if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
		ev.Branch = b
	} else if t, ok := strings.CutPrefix(ref, "refs/tags/"); ok {
		ev.Tag = t
	}
	if ev.Branch == "" && ev.Tag == "" {
		return Event{}, fmt.Errorf("%s: ref %q is neither refs/heads/BRANCH nor refs/tags/TAG: %w", what, ref, ErrPayload)
	}
	if err := checkRefName(ev.Branch + ev.Tag); err != nil {
		return Event{}, fmt.Errorf("%s: %v: %w", what, err, ErrPayload)
	}
	return ev, nil
}

// checkRefName refuses what cannot be a branch or tag name; "" (none) passes.
func checkRefName(name string) error {
	if len(name) > 255 {
		return fmt.Errorf("ref name of %d bytes: at most 255", len(name))
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("ref name %q has a control character", name)
		}
	}
	return nil
}
