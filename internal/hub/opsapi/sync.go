package opsapi

import "github.com/flotilla/flotilla/internal/hub/userapi"

// syncRoutes: POST /api/v1/sync.
func (a *API) syncRoutes() []userapi.Route { return nil }
