// Package helmchart fetches the Helm chart a Source.spec.helm names, for the hub to pack as the
// source's artifact, so that agents never contact a chart repository.
//
// # Repositories
//
// An https:// repository (http:// only with insecure) is a classic chart repository: the
// fetcher downloads its index.yaml (bounded, revalidated with If-None-Match against the ETag of
// the last download), picks the newest version of the chart that satisfies spec.version, and
// downloads the chart archive the index names, relative to the index or absolute. An index
// entry with a digest binds the archive: another archive is refused.
//
// An oci:// repository is a registry path: the chart is the OCI artifact <path>/<chart>, as
// `helm push` stores it (a manifest with one layer of media type
// application/vnd.cncf.helm.chart.content.v1.tar+gzip), and its tags are its versions (with
// "_" standing for semver's "+", as Helm writes them). It is read with go-containerregistry,
// the registry client the hub already links for images, rather than oras-go: one client, and
// it takes the hub's transport (timeouts, TLS roots, the credential guard) as it is.
//
// # Versions
//
// spec.version is a semver range (Masterminds/semver, as Helm's): the newest version that
// satisfies it wins; pre-releases match only a range that names one ("^2.0.0-0"). An empty
// version is the newest release that is not a pre-release.
//
// # Revisions
//
// The revision is "<version>@sha256:<hex>", the digest being that of the chart archive. When
// the repository states it before the download (an OCI manifest, an index entry with a digest)
// and the revision equals the previous one, Fetch reports Unchanged without downloading the
// chart.
//
// # Dependencies
//
// After unpacking, every dependency Chart.lock names (Chart.yaml's when there is no lock)
// that charts/ does not already hold is fetched from its repository (https:// or oci://) at
// its locked version and unpacked into charts/<name>/, and so are its own dependencies, to a
// bounded depth and count. Dependencies with a file:// or no repository must be in charts/
// already. Chart.yaml, aliases and conditions are left as they are: the agent renders the
// directory as `helm template` renders a chart whose dependencies were built.
//
// # What is refused
//
// Every input is bounded: index and archive sizes, the unpacked size and file count (the
// chart's and its dependencies' together), the number of dependencies and their depth.
// Archives must hold regular files and directories under one top directory: absolute paths,
// "..", links and device files are refused. Credentials are the operator's named credentials
// (source.Policy.HTTPCredentials): they are sent to the repository's own host only (an
// archive on another host, a redirect elsewhere or a registry's token service on a host the
// credential does not list gets none), and a dependency's repository gets them only when the
// credential lists its host.
package helmchart
