// Package source resolves the Git sources the hub deploys from and writes
// the tree at a resolved commit to disk, ready for artifact.Pack.
//
// # Polling
//
// A [Poller] keeps one bare mirror per repository URL under its cache
// directory (named by a hash of the URL; a plain path and its file:// form
// share one). [Poller.Resolve] first lists the remote's references (one
// round trip) and fetches only if a branch or tag moved, appeared or
// disappeared, so polling an unchanged repository transfers no objects, and
// a fetch transfers only new ones. Branches and tags are mirrored under
// their own names, force-updated and pruned, so the mirror follows
// force-pushes and deleted tags. Resolves of one URL are serialized; one
// that waited for a fetch begun after it was called uses that fetch instead
// of starting another, and [Options].MaxAge lets every source of one URL
// share a single fetch per poll. Sources sharing a URL and credentials share
// its mirror; a source without credentials gets a mirror of its own, so it
// never reads what another source fetched with them.
//
// Every call takes a context and returns when it ends, even if the
// transport does not (go-git's ssh handshake ignores contexts: the fetch is
// then left to finish in the background, holding its mirror).
//
// # Revisions
//
// A [Git] source selects at most one of:
//
//   - Branch: the branch's head;
//   - Tag: the tag's commit, annotated tags peeled;
//   - Semver: the highest tag satisfying the range, with or without a
//     leading "v" (Masterminds/semver: "^1.2", "~1.4", ">=2.0 <3");
//     tags that are not versions are ignored, and pre-releases count only
//     when the range names one;
//   - Commit: that full 40-digit hash, which must be reachable from a branch
//     or tag of the remote;
//   - none of them: the branch the remote's HEAD points to.
//
// [Resolved].Revision is "<branch or tag>@sha1:<hex>" ("main@sha1:4f2c…",
// "v1.4.2@sha1:9ab0…") or, for a pinned commit, "sha1:<hex>". Ref holds
// the full reference name and Commit the bare hex hash.
//
// # URLs
//
// https://host/org/repo.git, http://…, ssh://git@host/org/repo.git,
// git@host:org/repo.git, file:///srv/git/repo and /srv/git/repo.
//
// # Policy
//
// A [Policy] (Options.Policy) is what the hub's operator lets fleet sources use, loaded by
// [LoadPolicy] from --credentials-config: credentials by name ([Git].Credentials), each sent
// only to the hosts listed for it; credentialsFile only under allowCredentialsFiles; http://
// only with [Git].Insecure; file:// and plain paths only under the directories named with
// --allow-file-sources. The fleet repository the operator names on the command line
// ([Git].Operator) may use http:// and any path. Refusals name the source and the setting
// that would allow it. URLs with embedded credentials are redacted ([Redact]) in every
// message, fetch errors included.
//
// # Credentials file
//
// [LoadCredentials] reads either YAML or key=value lines (the first line
// that is not blank or a # comment decides: "key=value" if its '=' comes
// before any ':'). It sets exactly one method:
//
//	# HTTP bearer token
//	token: ghp_xxx
//
//	# HTTP basic auth
//	username: deploy
//	password: s3cret
//
//	# ssh key: a path (relative to the credentials file) or inline PEM,
//	# unencrypted; sshKnownHosts is a path or inline known_hosts lines
//	# (default: the user's known_hosts); sshUser defaults to the URL's
//	# user, then "git".
//	sshPrivateKey: /etc/flotilla/deploy_ed25519
//	sshKnownHosts: |
//	  github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl
//
// The same in key=value form (no inline PEM there: use a path):
//
//	username=deploy
//	password=s3cret
//
// Unknown keys are errors, so a typo does not silently mean anonymous
// access. Credentials never print their secrets (String, GoString). Token
// and username/password apply to http(s) URLs, keys to ssh URLs; file URLs
// ignore credentials.
//
// # Errors
//
// Errors start with the source ("source 'platform': fetch
// https://git.example.com/platform.git: authentication required") and wrap
// go-git's, so callers can test for transport.ErrAuthenticationRequired and
// the like with errors.Is.
package source
