package v1alpha1

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Rollout is how a new revision of a release moves through its clusters: wave after wave,
// each cluster counted done once its agent reports the revision Ready and it stays so for the
// wave's bake time. A rollout is pinned to one artifact digest from start to end.
type Rollout struct {
	Waves []Wave `json:"waves"`
	// ProgressDeadline bounds how long a cluster may take to report the revision Ready
	// before it counts as failed. Default 15m.
	ProgressDeadline Duration `json:"progressDeadline,omitzero"`
	// OnFailure is RolloutHalt (default) or RolloutRollback.
	OnFailure string `json:"onFailure,omitempty"`
	// Unreachable is RolloutSkip (default: an unreachable cluster is passed over, and gets
	// the revision when it comes back) or RolloutWait (the wave waits for it).
	Unreachable string `json:"unreachable,omitempty"`
	// Supersede is RolloutQueue (default: a revision that lands mid-rollout starts once the
	// current one has finished) or RolloutRestart (it starts a new rollout from the first wave).
	Supersede string `json:"supersede,omitempty"`
}

// Values of Rollout's string fields.
const (
	RolloutHalt     = "halt"
	RolloutRollback = "rollback"
	RolloutSkip     = "skip"
	RolloutWait     = "wait"
	RolloutQueue    = "queue"
	RolloutRestart  = "restart"
	// ApprovalRequired holds a wave until someone approves it.
	ApprovalRequired = "required"
)

// Wave is one step of a rollout. A cluster belongs to the first wave whose selector matches
// it; the last wave may have no selector (every cluster left).
type Wave struct {
	Name     string         `json:"name"`
	Selector *LabelSelector `json:"selector,omitempty"`
	// MaxConcurrent bounds the wave's clusters in progress at once: a number, or a
	// percentage of the wave's clusters ("25%", rounded up, at least 1). Default 100%.
	MaxConcurrent IntOrPercent `json:"maxConcurrent,omitzero"`
	// MaxFailures is how many of the wave's clusters may fail before the rollout halts: a
	// number or a percentage (rounded down). Default 0.
	MaxFailures IntOrPercent `json:"maxFailures,omitzero"`
	// Bake is how long a cluster must stay Ready and healthy to count as done.
	Bake Duration `json:"bake,omitzero"`
	// Approval "required" holds the wave until someone approves it.
	Approval string `json:"approval,omitempty"`
}

// ProgressDeadlineOrDefault is the progress deadline with its default applied.
func (r *Rollout) ProgressDeadlineOrDefault() Duration {
	if r.ProgressDeadline.Duration <= 0 {
		return Duration{15 * 60 * 1e9}
	}
	return r.ProgressDeadline
}

// IntOrPercent is a count ("1") or a percentage of a total ("25%").
type IntOrPercent struct {
	Value   int
	Percent bool
	// Set says the field was written: the zero value means "use the default".
	Set bool
}

// IsZero reports whether the field was left out (for omitzero).
func (v IntOrPercent) IsZero() bool { return !v.Set }

// Of resolves v against total: a count as it is, a percentage rounded up when up is true
// (maxConcurrent), down otherwise (maxFailures). def is used when v is not set.
func (v IntOrPercent) Of(total int, up bool, def IntOrPercent) int {
	if !v.Set {
		v = def
	}
	if !v.Percent {
		return v.Value
	}
	f := float64(total) * float64(v.Value) / 100
	if up {
		return int(math.Ceil(f))
	}
	return int(math.Floor(f))
}

// String writes a count as "3" and a percentage as "25%".
func (v IntOrPercent) String() string {
	if v.Percent {
		return strconv.Itoa(v.Value) + "%"
	}
	return strconv.Itoa(v.Value)
}

// MarshalJSON writes a count as a number and a percentage as a string.
func (v IntOrPercent) MarshalJSON() ([]byte, error) {
	if v.Percent {
		return json.Marshal(v.String())
	}
	return json.Marshal(v.Value)
}

// UnmarshalJSON reads a whole number or a string "N%" (0 to 100).
func (v *IntOrPercent) UnmarshalJSON(data []byte) error {
	var n float64
	if err := json.Unmarshal(data, &n); err == nil {
		if n != math.Trunc(n) || n < 0 || n > math.MaxInt32 {
			return fmt.Errorf("%s is not a whole number of at least 0", data)
		}
		*v = IntOrPercent{Value: int(n), Set: true}
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("must be a whole number or a percentage such as \"25%%\", not %s", data)
	}
	p, err := ParseIntOrPercent(s)
	if err != nil {
		return err
	}
	*v = p
	return nil
}

// ParseIntOrPercent reads "3" or "25%".
func ParseIntOrPercent(s string) (IntOrPercent, error) {
	num, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || (pct && n > 100) {
		return IntOrPercent{}, fmt.Errorf("%q is not a whole number of at least 0 or a percentage from 0%% to 100%%", s)
	}
	return IntOrPercent{Value: n, Percent: pct, Set: true}, nil
}

// IgnoreRule names fields of some objects that Flotilla sets when it creates the object and
// never takes back afterwards: another controller owns them (an HPA's replicas).
type IgnoreRule struct {
	Target IgnoreTarget `json:"target,omitzero"`
	// Paths are JSON pointers ("/spec/replicas", "/metadata/annotations/x~1y").
	Paths []string `json:"paths"`
}

// IgnoreTarget selects objects; an empty field matches any value.
type IgnoreTarget struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// Window says when changes may (allow) or may not (deny) land, for some releases on some
// clusters. Agents hold windows themselves, against their own clock.
type Window struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"` // "Window"
	Metadata   ObjectMeta `json:"metadata"`
	Spec       WindowSpec `json:"spec"`
}

// WindowSpec follows Argo CD's sync windows: while any allow window covers a release, changes
// land only inside one of them; a deny window blocks while it is open, whatever allows.
type WindowSpec struct {
	// Type is WindowAllow or WindowDeny.
	Type string `json:"type"`
	// Schedule is a five-field cron expression for when the window opens ("0 22 * * *").
	Schedule string `json:"schedule"`
	// Duration is how long it stays open each time.
	Duration Duration `json:"duration"`
	// TimeZone is an IANA name ("Europe/Berlin"); default UTC.
	TimeZone string `json:"timeZone,omitempty"`
	// Releases it covers: names or globs ("team-a-*"). Empty: every release.
	Releases []string `json:"releases,omitempty"`
	// ClusterSelector selects the clusters it covers; empty: every cluster.
	ClusterSelector LabelSelector `json:"clusterSelector,omitzero"`
	// Blocks lists what the window holds back: BlockRevisions, BlockPrune, BlockSelfHeal.
	// Default: new revisions only.
	Blocks []string `json:"blocks,omitempty"`
}

// Window types and what a window blocks.
const (
	WindowAllow    = "allow"
	WindowDeny     = "deny"
	BlockRevisions = "revisions"
	BlockPrune     = "prune"
	BlockSelfHeal  = "selfHeal"
)
