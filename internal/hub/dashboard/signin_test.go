package dashboard_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flotilla/flotilla/internal/browsertest"
	"github.com/flotilla/flotilla/internal/hub"
	"github.com/flotilla/flotilla/internal/hub/access"
	"github.com/flotilla/flotilla/internal/hub/hubtest"
	"github.com/flotilla/flotilla/internal/hubclient"
	"github.com/flotilla/flotilla/internal/oidctest"
)

// TestSignIn signs in to the dashboard with single sign-on against a real OpenID provider
// (the hub runs the device flow for the page; the test approves the code at the provider, as
// a user would in another tab), then with a named token of a project that has no cluster:
// the header names each principal and its role, and the second sees no cluster of the fleet.
func TestSignIn(t *testing.T) {
	t.Parallel()
	iss := oidctest.Start(t, "flotilla", map[string][]string{"id1": {"sre"}})
	f := hubtest.Start(t, hubtest.Options{Clusters: 4, Releases: 1, Hub: hub.Options{OIDC: access.OIDCOptions{
		Issuer: iss.URL, ClientID: "flotilla", CAFile: iss.CAFile, GroupRoles: []string{"sre=viewer:platform"},
	}}})
	admin, err := hubclient.NewClient(hubclient.Config{Hub: f.APIURL, Token: f.AdminToken, CAFile: f.CAPath})
	if err != nil {
		t.Fatal(err)
	}
	teamZ, err := admin.CreateUserToken(t.Context(), hubclient.CreateUserTokenRequest{Name: "team-z-viewer", Role: "viewer", Projects: []string{"team-z"}})
	if err != nil {
		t.Fatal(err)
	}

	spki, err := browsertest.ServerSPKI(t.Context(), f.APIURL, f.CAPath)
	if err != nil {
		t.Fatal(err)
	}
	tab := browsertest.Start(t, browsertest.Options{TrustSPKI: []string{spki}})
	browsertest.WatchScriptErrors(t, tab)
	waitFor := func(what, expr string) { t.Helper(); browsertest.WaitTrue(t, tab, time.Minute, what, expr) }
	text := func(js string) string {
		t.Helper()
		v, err := chromedp.Run(tab, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	const clusters = `(Array.from(document.querySelectorAll('#view-overview .card')).find((c) => c.querySelector('h3').textContent === 'Clusters') || {querySelector: () => ({textContent: ''})}).querySelector('.big').textContent`

	if _, err := chromedp.Run(tab, chromedp.Navigate(f.APIURL+"/")); err != nil {
		t.Fatal(err)
	}
	waitFor("the single sign-on button", `!document.getElementById('sso').hidden && !document.getElementById('login').hidden`)
	if _, err := chromedp.Run(tab, chromedp.Click(chromedp.CSS(`#sso-start`))); err != nil {
		t.Fatal(err)
	}
	waitFor("the user code", `!!document.getElementById('sso-user-code')`)
	if err := iss.Approve(t.Context(), text(`document.getElementById('sso-user-code').textContent`), "id1"); err != nil {
		t.Fatal(err)
	}
	waitFor("the signed-in principal", `document.getElementById('whoami').textContent === 'oidc:id1 (viewer of platform)'`)
	waitFor("the fleet", `(`+clusters+`) === '4'`)

	// A token of a project with no cluster: the dashboard shows none of the fleet's.
	if _, err := chromedp.Run(tab, chromedp.Click(chromedp.CSS(`#signout`))); err != nil {
		t.Fatal(err)
	}
	waitFor("the sign-in form", `!document.getElementById('login').hidden`)
	if _, err := chromedp.Run(tab, chromedp.Navigate(f.APIURL+"/#token="+teamZ.Token)); err != nil {
		t.Fatal(err)
	}
	waitFor("the team-z principal", `document.getElementById('whoami').textContent === 'token:team-z-viewer (viewer of team-z)'`)
	waitFor("team-z's fleet", `(`+clusters+`) === '0'`)
}
