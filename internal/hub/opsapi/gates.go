package opsapi

import "github.com/flotilla/flotilla/internal/hub/userapi"

// gateRoutes: freezes and cluster suspensions.
func (a *API) gateRoutes() []userapi.Route { return nil }
