package opsapi

import "net/http"

// hookRoutes: POST /hooks/github, /hooks/gitlab, /hooks/generic.
func (a *API) hookRoutes() map[string]http.Handler { return nil }
