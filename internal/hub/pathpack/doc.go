// Package pathpack packs, for one source artifact and one release path, the part of the
// source the agent's renderer may read for that path: its closure. Clusters then download
// only what their own releases render, never the manifests of other clusters' paths.
//
// The closure is [render.Closure]'s: the renderer's own code decides what a path reads, so
// the two cannot drift apart. In short:
//
//   - a directory holding Chart.yaml is a chart: the whole directory, hidden files and
//     subcharts in charts/ included;
//   - a directory holding a kustomization: the kustomization file and everything its fields
//     name (resources, bases, components and the directories they reach, patches, generator
//     and transformer files, crds, configurations, openapi, replacements), recursively,
//     including ../ references that stay inside the source;
//   - any other directory: its manifests (.yaml, .yml, .json) and kustomization files, below
//     it, hidden names skipped, as the plain renderer reads them;
//   - a file (a Helm values file): the file.
//
// Symlinks inside the source are kept as symlinks, with what they point to. A reference that
// is remote, absolute, climbs above the source or names nothing is left out: the agent's
// render then fails as it would have on the whole source, with the renderer's error. A
// closure is never widened to the whole source. The walk is bounded
// ([render.ClosureLimits]); a path over a bound, or one Closure refuses, is not packed.
//
// The artifact keeps every file at its path in the source, so the assignment's path and the
// relative references in kustomizations are unchanged. It is deterministic: the same files
// give the same digest, whichever path, revision or cluster they were packed for, and the
// closure of a path inside its own artifact is that artifact again.
package pathpack
