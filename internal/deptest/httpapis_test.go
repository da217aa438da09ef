package deptest_test

import (
	"testing"

	"github.com/flotilla/flotilla/internal/deptest"
)

// TestUserFacingAPIsArePeers: the hub's user-facing APIs share their plumbing through
// internal/hub/httpapi, and the hub mounts them side by side; none links another (before,
// opsapi, bundleapi and keysapi imported userapi for its routes, rules and error answers,
// and userapi mounted them). The age recipients' route lives with their records in agekeys,
// which userapi may link for the records (a removed cluster's go with it), but which links
// none of the others.
func TestUserFacingAPIsArePeers(t *testing.T) {
	t.Parallel()
	const m = "github.com/flotilla/flotilla/internal/hub/"
	apis := []string{"userapi", "opsapi", "bundleapi"}
	for _, api := range append(apis, "agekeys") {
		var rules []deptest.Rule
		for _, peer := range apis {
			if peer != api {
				rules = append(rules, deptest.Rule{Prefix: m + peer, Why: "a peer user-facing API (share through internal/hub/httpapi; the hub mounts both)"})
			}
		}
		t.Run(api+" links no peer", func(t *testing.T) { deptest.Check(t, m+api, rules) })
	}
	t.Run("httpapi links none of them", func(t *testing.T) {
		var rules []deptest.Rule
		for _, api := range append(apis, "agekeys") {
			rules = append(rules, deptest.Rule{Prefix: m + api, Why: "an API it serves (the routes come in as []httpapi.Route)"})
		}
		deptest.Check(t, m+"httpapi", rules)
	})
}
