// Package render turns a directory of an unpacked artifact into the Kubernetes objects the agent
// applies.
//
// # Input
//
// [Render] looks at Options.Path inside Options.Root:
//
//   - With a kustomization (kustomization.yaml, kustomization.yml or Kustomization) it runs
//     kustomize, as `kustomize build` would, keeping kustomize's output order.
//   - Without one it reads every .yaml, .yml and .json file below the path, recursively, in
//     path order, skipping files and directories whose names start with a dot. A file may hold
//     several documents (YAML "---" or concatenated JSON); empty documents are skipped, and a
//     List (any kind ending in "List" that has items) is replaced by its items. Every object needs
//     apiVersion, kind and metadata.name. Objects annotated
//     config.kubernetes.io/local-config: "true" are left out, as kustomize leaves them out. A
//     kustomization file below the path is an error, not an object: render its directory as
//     the path, or list it from a kustomization at the path.
//
// YAML is read with YAML 1.2 rules, like kustomize: "yes" and "on" are strings, and timestamps
// and !!binary values keep their text. Duplicate keys are an error.
//
// # Confinement
//
// Nothing outside Root is read. Path may not lead above Root, be absolute, or be a symlink out
// of Root. Symlinks inside Root are followed; in a plain directory, a symlink out of Root (or a
// broken one, or a loop) is an error naming it when it would be read. For a kustomization,
// kustomize works on an in-memory copy of Root, so "../base" works as long as it stays inside
// Root; unusable symlinks are left out of the copy, and a kustomization that refers to one that
// leads outside gets an error naming it.
//
// Rendering never uses the network. Before kustomize runs, every kustomization involved and
// every generator, transformer and validator config it lists (inline or in a file) is checked,
// and these are refused with an error naming the file, the field and the reference, such as
// "render kustomization.yaml: patches[0].path: remote reference "https://x/p.yaml" refused:
// rendering reads only the artifact":
//
//   - remote references in any field that names a file or base ([ErrRemoteNotAllowed]): a URL
//     of any scheme (http://, https://, ssh://, file://), git::..., github.com/... and
//     git@host: addresses, in resources, bases, components, patches, patchesJson6902,
//     patchesStrategicMerge, replacements, configMapGenerator and secretGenerator files and
//     envs, crds, configurations and openapi, and in the files, envs, path, paths,
//     replacements[].path, targetFilePath and value fields of the built-in ConfigMapGenerator,
//     SecretGenerator, PatchTransformer, PatchJson6902Transformer,
//     PatchStrategicMergeTransformer, ReplacementTransformer and ValueAddTransformer;
//   - references that lead outside Root, absolute paths included ([ErrOutsideRoot]);
//   - a kustomization directory listed under generators, transformers or validators
//     ([ErrConfigNotCheckable]): kustomize would build those configs, and a replacement can
//     assemble a URL that no file holds, so they could not be checked before use;
//   - helmCharts, helmGlobals, helmChartInflationGenerator and HelmChartInflationGenerator
//     configs ([ErrHelmNotAllowed]).
//
// kustomize then reads the in-memory copy through a sealed file system that refuses, field
// blind, any kustomization or built-in plugin config holding a string kustomize could take for
// a remote location (annotations, labels and generator literals excepted). kustomize offers no
// way to replace its HTTP client or Git cloner, and every configuration it acts on is read
// through that file system, so this holds even for a field a future kustomize learns to fetch
// and the checks above do not know.
//
// kustomize runs with plugins disabled: exec, container-function and Go plugins fail with
// [ErrPluginsNotAllowed]; the built-in generators and transformers work.
//
// # Variables
//
// After rendering, variables are substituted in every object with the semantics of Flux's
// postBuild.substitute in strict mode (github.com/fluxcd/pkg/envsubst): ${var}, ${var:=default}
// and ${var:-default} are replaced, $var is not, and $${var} writes a literal ${var}. The object
// is substituted as YAML text, quoted as it was written, and parsed again: "replicas: ${n}"
// yields a number, "value: \"${n}\"" a string, and every string of a JSON file stays a string.
// Values have their newlines removed, as in Flux. Comments are not substituted. A
// reference to a variable that is not in Options.Vars and has no default fails with
// [ErrUndefinedVariable], naming the variable, the object and the file it came from (for
// kustomize output, taken from kustomize's origin annotation, which Render requests and then
// removes). Objects annotated or labelled flotilla.dev/substitute: disabled are left untouched.
// Substitution runs even when Vars is empty; objects without "${" or "$$" cost a scan of their
// strings and nothing more. [ClusterVars] gives the variables a cluster contributes.
//
// # Closure
//
// [Closure] lists what rendering a path reads (the hub packs just that for a cluster), with
// the code above rather than beside it: the chart loader for a chart (then the whole chart
// directory), the plain walker for a plain directory, and for a kustomization kustomize's
// own types with the reference lists the checks before kustomize walk. A copy of those
// entries renders to the same objects, or the same error, as the whole tree; the test holds
// it to that over every fixture of this package and Helm's test charts. What the render
// refuses by a reference's text is left out (the kustomization naming it is kept, so the
// render refuses it again); what a copy could not reproduce is refused by Closure with the
// render's own error. The walk is bounded ([ClosureLimits]).
//
// # Errors
//
// Every error is an [*Error] carrying the file (relative to Root), the line when known and the
// object concerned, and formats as "render apps/web.yaml:12: yaml: ...". The sentinel errors
// above tell refusals, which no retry of the same artifact can fix, from other failures.
//
// kustomize builds are serialised within the process, because kustomize keeps OpenAPI schema
// state in package variables; plain directories render concurrently.
package render
