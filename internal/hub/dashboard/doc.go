// Package dashboard is the hub's web dashboard: its hand-written pages (embedded, no build
// step, nothing fetched from elsewhere), the compact fleet document the pages poll, and the
// cache that lets many open dashboards share one computation of it.
//
// The pages hold no fleet data and need no authentication to load; every byte of fleet data
// comes from the user API with the admin bearer token, which the page takes from the URL
// fragment (#token=..., never sent to the server) or a sign-in form and keeps in
// sessionStorage.
package dashboard
