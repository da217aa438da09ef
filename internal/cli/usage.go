package cli

import (
	"crypto/x509"
	"errors"
	"net/http"

	"github.com/flotilla/flotilla/internal/cli/clikit"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// withUsageErrors and argsNamed are clikit's (WithUsageErrors, ArgsNamed).
var (
	withUsageErrors = clikit.WithUsageErrors
	argsNamed       = clikit.ArgsNamed
)

// hint suggests the fix for a common mistake, or returns "".
func hint(err error) string {
	var unknownCA x509.UnknownAuthorityError
	var se *hubclient.StatusError
	switch {
	case errors.As(err, &se) && se.Code == http.StatusUnauthorized:
		return "use a token from `flotilla token create`, admin.token in the hub's data dir, or sign in with `flotilla login` (an ID token expires: sign in again)"
	case errors.As(err, &se) && se.Code == http.StatusForbidden:
		return "this token's role does not allow it: ask an admin for a token or group with the role (docs/access.md)"
	case errors.Is(err, hubclient.ErrNoHub):
		return "after `make demo`, `source out/demo/demo.env` sets FLOTILLA_HUB, FLOTILLA_TOKEN and FLOTILLA_CA (flotilla demo --data-dir D writes D/demo.env)"
	case errors.As(err, &unknownCA):
		return "the hub's certificate is signed by its own CA: give it with --ca (or FLOTILLA_CA), the ca.crt in the hub's data dir"
	}
	return ""
}
