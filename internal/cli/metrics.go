package cli

import "github.com/flotilla/flotilla/internal/cli/clikit"

// serveMetrics serves a handler at /metrics on an address until the context ends.
var serveMetrics = clikit.ServeMetrics
