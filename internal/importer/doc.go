// Package importer converts another GitOps tool's objects (Argo CD's Applications,
// ApplicationSets, AppProjects and repository Secrets; Flux's GitRepositories, Kustomizations
// and the kinds beside them) into a Flotilla fleet configuration, and reports, line by line,
// everything it could not convert.
//
// The conversion is a pure function over decoded objects: [ReadInputs] reads and bounds the
// files, [ArgoCD] and [Flux] convert, [Result.Write] writes one file per kind. Nothing is
// silently dropped: every field the converter does not turn into Flotilla configuration is
// either a [Finding] of the report or, for what a cluster fills in at run time (status,
// uid, resourceVersion, managedFields, ...), ignored by rule (see docs/import.md).
//
// Secret values are never read: of a repository Secret only its metadata and the url, type
// and project keys are looked at, to name the credentials a Source needs.
package importer
