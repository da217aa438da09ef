package opsapi

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"

	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hub/webhook"
	"github.com/flotilla/flotilla/internal/keyrate"
)

// Each remote address may deliver hookQPS webhooks a second, hookBurst at once: GitHub and
// GitLab send from a few addresses, one delivery per push, and a burst of pushes (a merge
// train) fits; a caller guessing secrets does not get far.
const (
	hookQPS     = 5
	hookBurst   = 20
	hookMaxKeys = 10000
)

// HookResponse is the answer to a webhook delivery.
type HookResponse struct {
	Provider string `json:"provider"`
	Event    string `json:"event"`
	// Ref is the ref the push moved ("refs/heads/main", "refs/tags/v1.2.0"), "" for none.
	Ref string `json:"ref,omitempty"`
	// Polled are the sources polled at once; Message says why none, or why the event was
	// not acted on.
	Polled  []string `json:"polled"`
	Message string   `json:"message,omitempty"`
}

// hookRoutes: POST /hooks/github, /hooks/gitlab, /hooks/generic.
func (a *API) hookRoutes() map[string]http.Handler {
	limits := keyrate.New[string](a.d.Clock, hookQPS, hookBurst, hookMaxKeys)
	out := make(map[string]http.Handler, len(webhook.Providers))
	for _, p := range webhook.Providers {
		out["POST /hooks/"+string(p)] = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.hook(w, r, p, limits) })
	}
	return out
}

// hook serves one provider's deliveries: 404 without a configured secret, 429 past the
// address's rate, 413 for a body over webhook.MaxBody, 401 for a bad signature or token
// (logged without the body), 400 for a payload that is not a push, 200 for a ping or an
// event the hub does not act on, 202 with the sources polled for a push.
func (a *API) hook(w http.ResponseWriter, r *http.Request, p webhook.Provider, limits *keyrate.Buckets[string]) {
	secret := a.o.WebhookSecrets[string(p)]
	if secret == "" {
		httpapi.WriteError(w, http.StatusNotFound, fmt.Errorf("no %s webhook: the hub has no secret for it (flotilla hub --webhook-secret-file %s=FILE)", p, p))
		return
	}
	addr := remoteHost(r.RemoteAddr)
	if !limits.Get(addr).AllowN(a.d.Clock.Now(), 1) {
		w.Header().Set("Retry-After", strconv.Itoa(1))
		httpapi.WriteError(w, http.StatusTooManyRequests, fmt.Errorf("%s webhook: too many deliveries from %s: at most %d a second", p, addr, hookQPS))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, webhook.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			httpapi.WriteError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("%s webhook: body over %d bytes", p, webhook.MaxBody))
			return
		}
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("%s webhook: read body: %w", p, err))
		return
	}
	if err := webhook.Verify(p, r.Header, body, secret); err != nil {
		// The body is not logged: it is whatever an unauthenticated caller sent.
		a.d.Logger.Warn("webhook refused", "provider", p, "remote", addr, "bytes", len(body), "error", err)
		httpapi.WriteError(w, http.StatusUnauthorized, err)
		return
	}
	ev, err := webhook.Parse(p, r.Header, body)
	if err != nil {
		a.d.Logger.Warn("webhook payload refused", "provider", p, "remote", addr, "error", err)
		httpapi.WriteError(w, http.StatusBadRequest, err)
		return
	}
	resp := HookResponse{Provider: string(p), Event: ev.Name, Ref: ev.Ref(), Polled: []string{}}
	switch ev.Kind {
	case webhook.KindPing:
		resp.Message = "pong: the secret matches"
		httpapi.WriteJSON(w, http.StatusOK, resp)
		return
	case webhook.KindIgnored:
		resp.Message = fmt.Sprintf("event %q ignored: only pushes poll sources", ev.Name)
		httpapi.WriteJSON(w, http.StatusOK, resp)
		return
	}
	for _, u := range ev.URLs {
		for _, name := range a.d.PollNow(u, ev.Ref()) {
			if !slices.Contains(resp.Polled, name) {
				resp.Polled = append(resp.Polled, name)
			}
		}
	}
	slices.Sort(resp.Polled)
	if len(resp.Polled) == 0 {
		resp.Message = "no source follows this repository and ref"
	} else {
		// On a replica that does not poll, PollNow stored the polls: the wake-up reaches the
		// replica that does, whose next reschedule takes them.
		a.d.Wake()
	}
	a.d.Logger.Info("webhook push", "provider", p, "remote", addr, "ref", resp.Ref, "urls", ev.URLs, "polled", resp.Polled)
	httpapi.WriteJSON(w, http.StatusAccepted, resp)
}

// remoteHost is the address part of a RemoteAddr.
func remoteHost(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}
