package v1alpha1

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"
)

// rollouts checks what issue 13 adds: Release rollout, ignore, respectManagers and dependsOn
// (cycles included), and Window objects. releases maps each release name to its file.
func (v *validator) rollouts(f *Fleet, releases map[string]string) {
	for i := range f.Releases {
		r := &f.Releases[i]
		_, add := v.object(KindRelease, i, r.Metadata.Name)
		if r.Spec.Rollout != nil {
			validateRollout(*r.Spec.Rollout, add)
		}
		validateIgnore(r.Spec.Ignore, add)
		validateRespectManagers(r.Spec.RespectManagers, add)
		validateDependsOn(r.Metadata.Name, r.Spec.DependsOn, releases, add)
		if r.Spec.Adopt != nil {
			validateAdopt(*r.Spec.Adopt, add)
		}
	}
	v.dependsOnCycles(f, releases)

	windows := make(map[string]string)
	for i := range f.Windows {
		w := &f.Windows[i]
		file, add := v.object(KindWindow, i, w.Metadata.Name)
		validateMeta(w.Metadata, add)
		checkDuplicate(windows, KindWindow, w.Metadata.Name, file, add)
		validateWindowSpec(w.Spec, add)
		if i == maxWindows {
			add("", fmt.Sprintf("the fleet defines %d windows, more than %d: every cluster's agent receives the windows that select it, and refuses a desired state with too many gates", len(f.Windows), maxWindows))
		}
	}
}

// Values the rollout's string fields accept, for messages.
var (
	onFailureValues   = []string{RolloutHalt, RolloutRollback}
	unreachableValues = []string{RolloutSkip, RolloutWait}
	supersedeValues   = []string{RolloutQueue, RolloutRestart}
)

func validateRollout(ro Rollout, add func(field, msg string)) {
	if len(ro.Waves) == 0 {
		add("spec.rollout.waves", "must list at least one wave (a wave without a selector takes every cluster)")
	}
	names := map[string]int{}
	for i, w := range ro.Waves {
		f := fmt.Sprintf("spec.rollout.waves[%d]", i)
		switch prev, dup := names[w.Name]; {
		case w.Name == "":
			add(f+".name", "must be set")
		case dup:
			add(f+".name", fmt.Sprintf("wave %q is already defined as waves[%d]", w.Name, prev))
		default:
			names[w.Name] = i
			if msgs := content.IsDNS1123Label(w.Name); len(msgs) > 0 {
				add(f+".name", fmt.Sprintf("%q is not a valid wave name: %s", w.Name, strings.Join(msgs, "; ")))
			}
		}
		last := i == len(ro.Waves)-1
		switch {
		case w.Selector == nil && !last:
			add(f+".selector", "must be set: only the last wave may leave it out (it takes every cluster left)")
		case w.Selector != nil && len(w.Selector.MatchLabels) == 0 && !last:
			add(f+".selector", "matches every cluster, so the waves after it would get none: give it matchLabels, or make it the last wave")
		case w.Selector != nil:
			validateLabels(f+".selector.matchLabels", w.Selector.MatchLabels, add)
		}
		if mc := w.MaxConcurrent; mc.Set {
			switch {
			case mc.Percent && (mc.Value < 1 || mc.Value > 100):
				add(f+".maxConcurrent", fmt.Sprintf("must be a percentage from 1%% to 100%%, not %s", mc))
			case !mc.Percent && mc.Value < 1:
				add(f+".maxConcurrent", fmt.Sprintf("must be at least 1, not %s: a wave that updates no cluster at a time never finishes", mc))
			}
		}
		if mf := w.MaxFailures; mf.Set && (mf.Value < 0 || (mf.Percent && mf.Value > 100)) {
			add(f+".maxFailures", fmt.Sprintf("must be a whole number of at least 0 or a percentage from 0%% to 100%%, not %s", mf))
		}
		if w.Bake.Duration < 0 {
			add(f+".bake", fmt.Sprintf("must be positive, not %v", w.Bake.Duration))
		}
		switch w.Approval {
		case "", ApprovalRequired:
		default:
			add(f+".approval", fmt.Sprintf("%q is not an approval: want %q, or leave it out", w.Approval, ApprovalRequired))
		}
	}
	if ro.ProgressDeadline.Duration < 0 {
		add("spec.rollout.progressDeadline", fmt.Sprintf("must be positive, not %v", ro.ProgressDeadline.Duration))
	}
	oneOf("spec.rollout.onFailure", ro.OnFailure, onFailureValues, add)
	oneOf("spec.rollout.unreachable", ro.Unreachable, unreachableValues, add)
	oneOf("spec.rollout.supersede", ro.Supersede, supersedeValues, add)
}

// oneOf checks a field whose empty value means the first of values.
func oneOf(field, value string, values []string, add func(field, msg string)) {
	if value != "" && !slices.Contains(values, value) {
		add(field, fmt.Sprintf("%q is not valid: want %s (default %s)", value, strings.Join(values, " or "), values[0]))
	}
}

func validateIgnore(rules []IgnoreRule, add func(field, msg string)) {
	for i, rule := range rules {
		f := fmt.Sprintf("spec.ignore[%d]", i)
		if k := rule.Target.Kind; k != "" && !kindName.MatchString(k) {
			add(f+".target.kind", fmt.Sprintf("%q is not a kind such as \"Deployment\"", k))
		}
		if ns := rule.Target.Namespace; ns != "" {
			if msgs := content.IsDNS1123Label(ns); len(msgs) > 0 {
				add(f+".target.namespace", fmt.Sprintf("%q is not a valid namespace name: %s", ns, strings.Join(msgs, "; ")))
			}
		}
		if len(rule.Paths) == 0 {
			add(f+".paths", `must list at least one JSON pointer, such as "/spec/replicas"`)
		}
		for j, p := range rule.Paths {
			if msg := checkJSONPointer(p); msg != "" {
				add(fmt.Sprintf("%s.paths[%d]", f, j), msg)
			}
		}
	}
}

// checkJSONPointer checks p against RFC 6901, and refuses the pointer to the whole object,
// which would make Flotilla never update anything of it.
func checkJSONPointer(p string) string {
	switch {
	case p == "":
		return `must not be empty: a JSON pointer to a field, such as "/spec/replicas"`
	case !strings.HasPrefix(p, "/"):
		return fmt.Sprintf(`%q is not a JSON pointer: it must start with "/", as in "/spec/replicas"`, p)
	case p == "/":
		return `"/" names no field: point at one, such as "/spec/replicas"`
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return fmt.Sprintf(`%q is not a JSON pointer: "~" must be followed by 0 or 1 (write "~0" for "~" and "~1" for "/" in a key)`, p)
		}
	}
	return ""
}

// maxManagerName is the Kubernetes API server's limit on a field manager's name.
const maxManagerName = 128

// Bounds of spec.adopt, as the agent checks them: the hub never accepts what agents refuse.
const (
	maxAdoptManagers  = 32
	maxHelmReleaseLen = 53 // Helm's own bound on release names
)

func validateAdopt(a Adopt, add func(field, msg string)) {
	switch {
	case len(a.FromManagers) == 0:
		add("spec.adopt.fromManagers", `must name the field managers to take over, such as "argocd-controller" or "kustomize-controller"`)
	case len(a.FromManagers) > maxAdoptManagers:
		add("spec.adopt.fromManagers", fmt.Sprintf("has %d entries, more than %d", len(a.FromManagers), maxAdoptManagers))
	}
	seen := map[string]bool{}
	for i, m := range a.FromManagers {
		f := fmt.Sprintf("spec.adopt.fromManagers[%d]", i)
		switch {
		case strings.TrimSpace(m) == "":
			add(f, "must not be empty")
		case len(m) > maxManagerName:
			add(f, fmt.Sprintf("is %d bytes long: a field manager's name has at most %d", len(m), maxManagerName))
		case m == "flotilla":
			add(f, `"flotilla" is Flotilla's own field manager: there is nothing to take over from it`)
		case seen[m]:
			add(f, fmt.Sprintf("%q is listed twice", m))
		}
		seen[m] = true
	}
	if len(a.HelmRelease) > maxHelmReleaseLen {
		add("spec.adopt.helmRelease", fmt.Sprintf("is %d bytes long: a Helm release name has at most %d", len(a.HelmRelease), maxHelmReleaseLen))
	}
	if a.HelmReleaseNamespace != "" && a.HelmRelease == "" {
		add("spec.adopt.helmReleaseNamespace", "is set without helmRelease: name the Helm release whose storage Secrets go")
	}
	if ns := a.HelmReleaseNamespace; ns != "" {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			add("spec.adopt.helmReleaseNamespace", fmt.Sprintf("%q is not a namespace name: %s", ns, strings.Join(errs, "; ")))
		}
	}
}

func validateRespectManagers(managers []string, add func(field, msg string)) {
	seen := map[string]bool{}
	for i, m := range managers {
		f := fmt.Sprintf("spec.respectManagers[%d]", i)
		switch {
		case strings.TrimSpace(m) == "":
			add(f, `must not be empty: name a field manager, such as "kube-controller-manager" or "*-operator"`)
		case len(m) > maxManagerName:
			add(f, fmt.Sprintf("is %d bytes long: a field manager's name has at most %d", len(m), maxManagerName))
		case seen[m]:
			add(f, fmt.Sprintf("%q is listed twice", m))
		}
		seen[m] = true
	}
}

func validateDependsOn(self string, deps []string, releases map[string]string, add func(field, msg string)) {
	seen := map[string]bool{}
	for i, d := range deps {
		f := fmt.Sprintf("spec.dependsOn[%d]", i)
		_, defined := releases[d]
		switch {
		case d == "":
			add(f, "must not be empty: name a release")
		case d == self:
			add(f, fmt.Sprintf("release %q cannot depend on itself", d))
		case seen[d]:
			add(f, fmt.Sprintf("%q is listed twice", d))
		case !defined:
			add(f, fmt.Sprintf("release %q is not defined in this fleet", d))
		}
		seen[d] = true
	}
}

// dependsOnCycles reports every cycle of dependsOn once, on the release of the cycle whose
// name sorts first, naming the releases in dependency order: "a -> b -> c -> a". Agents
// would wait on a cycle forever.
func (v *validator) dependsOnCycles(f *Fleet, releases map[string]string) {
	index := map[string]int{} // the first release of each name
	for i := range f.Releases {
		if _, dup := index[f.Releases[i].Metadata.Name]; !dup {
			index[f.Releases[i].Metadata.Name] = i
		}
	}
	edges := func(name string) []string {
		var out []string
		for _, d := range f.Releases[index[name]].Spec.DependsOn {
			if _, ok := releases[d]; ok && d != name && !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
		return out
	}
	const (
		unseen = iota
		onStack
		done
	)
	state := map[string]int{}
	var stack []string
	reported := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		state[name] = onStack
		stack = append(stack, name)
		for _, d := range edges(name) {
			switch state[d] {
			case unseen:
				visit(d)
			case onStack:
				start := slices.Index(stack, d)
				v.reportCycle(f, index, slices.Clone(stack[start:]), reported)
			}
		}
		stack = stack[:len(stack)-1]
		state[name] = done
	}
	for _, name := range slices.Sorted(maps.Keys(index)) {
		if state[name] == unseen {
			visit(name)
		}
	}
}

func (v *validator) reportCycle(f *Fleet, index map[string]int, cycle []string, reported map[string]bool) {
	first := slices.Index(cycle, slices.Min(cycle))
	cycle = append(cycle[first:], cycle[:first]...)
	text := strings.Join(append(cycle, cycle[0]), " -> ")
	if reported[text] {
		return
	}
	reported[text] = true
	i := index[cycle[0]]
	_, add := v.object(KindRelease, i, f.Releases[i].Metadata.Name)
	add("spec.dependsOn", "dependsOn cycle: "+text)
}

// cronParser reads the five-field cron expressions of windows: minute, hour, day of month,
// month, day of week. Descriptors ("@daily") are refused: the agents read the same syntax.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// Bounds of a window that agents check again (internal/window.Check): a window the hub
// accepts must not be one an agent refuses.
const (
	maxWindowDuration = 366 * 24 * time.Hour
	maxWindowReleases = 256
	maxScheduleLen    = 256
	maxTimeZoneLen    = 64
	// maxWindows keeps a cluster's gates (windows, up to 100 freezes, suspensions) well
	// below the 1000 an agent reads.
	maxWindows = 500
)

// windowBlocks are what a window may block, in the order messages list them.
var windowBlocks = []string{BlockRevisions, BlockPrune, BlockSelfHeal}

func validateWindowSpec(s WindowSpec, add func(field, msg string)) {
	switch s.Type {
	case WindowAllow, WindowDeny:
	case "":
		add("spec.type", fmt.Sprintf("must be set: %s or %s", WindowAllow, WindowDeny))
	default:
		add("spec.type", fmt.Sprintf("%q is not a window type: want %s or %s", s.Type, WindowAllow, WindowDeny))
	}
	if msg := checkSchedule(s.Schedule); msg != "" {
		add("spec.schedule", msg)
	}
	switch d := s.Duration.Duration; {
	case d == 0:
		add("spec.duration", `must be set: how long the window stays open each time it opens, such as "8h"`)
	case d < 0:
		add("spec.duration", fmt.Sprintf("must be positive, not %v", d))
	case d < time.Minute:
		// Schedules fire at whole minutes, and agents receive durations in whole seconds.
		add("spec.duration", fmt.Sprintf("must be at least 1m, not %v", d))
	case d > maxWindowDuration:
		add("spec.duration", fmt.Sprintf("must be at most %v (366 days), not %v", maxWindowDuration, d))
	}
	if msg := checkTimeZone(s.TimeZone); msg != "" {
		add("spec.timeZone", msg)
	}
	if len(s.Releases) > maxWindowReleases {
		add("spec.releases", fmt.Sprintf("lists %d releases, more than %d: use patterns such as \"team-a-*\"", len(s.Releases), maxWindowReleases))
	}
	for i, r := range s.Releases {
		if msg := checkNamePattern(r); msg != "" {
			add(fmt.Sprintf("spec.releases[%d]", i), fmt.Sprintf("%q is not a release name or pattern: %s", r, msg))
		}
	}
	validateLabels("spec.clusterSelector.matchLabels", s.ClusterSelector.MatchLabels, add)
	seen := map[string]bool{}
	for i, b := range s.Blocks {
		f := fmt.Sprintf("spec.blocks[%d]", i)
		switch {
		case !slices.Contains(windowBlocks, b):
			add(f, fmt.Sprintf("%q is not something a window blocks: want %s", b, strings.Join(windowBlocks, ", ")))
		case seen[b]:
			add(f, fmt.Sprintf("%q is listed twice", b))
		}
		seen[b] = true
	}
}

// checkSchedule checks a window's cron expression, and that it ever opens.
func checkSchedule(s string) (msg string) {
	if strings.TrimSpace(s) == "" {
		return `must be set: a five-field cron expression (minute hour day-of-month month day-of-week), such as "0 22 * * *"`
	}
	if len(s) > maxScheduleLen {
		return fmt.Sprintf("is %d bytes long, more than %d", len(s), maxScheduleLen)
	}
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "TZ=") || strings.HasPrefix(t, "CRON_TZ=") {
		return fmt.Sprintf("%q: set the time zone in spec.timeZone, not in the schedule", s)
	}
	// The cron library panics on some inputs (a TZ= prefix without a space, refused above);
	// a fleet file must never stop the hub.
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprintf("%q is not a five-field cron expression (minute hour day-of-month month day-of-week): %v", s, r)
		}
	}()
	sched, err := cronParser.Parse(s)
	if err != nil {
		return fmt.Sprintf("%q is not a five-field cron expression (minute hour day-of-month month day-of-week): %v", s, err)
	}
	// The cron library looks five years ahead: a schedule with nothing in them never opens
	// (the 30th of February).
	if sched.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return fmt.Sprintf("%q never opens: no date matches it", s)
	}
	return ""
}

// checkTimeZone checks an IANA time zone name; "" is UTC.
func checkTimeZone(tz string) string {
	switch {
	case tz == "":
		return ""
	case len(tz) > maxTimeZoneLen:
		return fmt.Sprintf("is %d bytes long: an IANA time zone name has at most %d", len(tz), maxTimeZoneLen)
	case tz == "Local":
		return `"Local" is whatever zone each machine is set to: name the zone, such as "Europe/Berlin" or "UTC"`
	case strings.HasPrefix(tz, "/") || strings.Contains(tz, ".."):
		return fmt.Sprintf("%q is not an IANA time zone name, such as \"Europe/Berlin\"", tz)
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return fmt.Sprintf("%q is not an IANA time zone name, such as \"Europe/Berlin\": %v", tz, err)
	}
	return ""
}
