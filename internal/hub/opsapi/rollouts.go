package opsapi

import "github.com/flotilla/flotilla/internal/hub/userapi"

// rolloutRoutes: GET /api/v1/rollouts, GET /api/v1/rollouts/{release},
// POST /api/v1/rollouts/{release}/{action}.
func (a *API) rolloutRoutes() []userapi.Route { return nil }
