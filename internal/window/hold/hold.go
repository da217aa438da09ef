// Package hold provides the holds operators put on the fleet outside its configuration:
// freezes and cluster suspensions, as the hub stores them, how a request for one is
// checked, and the window.Gate each becomes in the desired state of the clusters it covers.
//
// It is pure: the hub's operator API writes the records, its controller reads them back
// and turns them into gates, and both read a record that does not decode the same way, as
// a hold of everything it could cover.
package hold

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/flotilla/flotilla/api/v1alpha1"
	"github.com/flotilla/flotilla/internal/window"
)

// Kinds of the store records that hold freezes and suspended clusters.
const (
	// RecordFreeze: one record per freeze, keyed by its ID; data a Freeze.
	RecordFreeze = "freeze"
	// RecordSuspend: one record per suspended cluster, keyed by the cluster's name; data a
	// Suspension.
	RecordSuspend = "suspend"
)

// Freeze stops new revisions of a release, or of every release, on the clusters its
// selector matches (every cluster when it has none), until it is lifted.
type Freeze struct {
	ID string `json:"id"`
	// Release is the release frozen; "" freezes every release.
	Release string `json:"release,omitempty"`
	// Selector are the labels of the clusters frozen; empty: every cluster.
	Selector map[string]string `json:"selector,omitempty"`
	Reason   string            `json:"reason"`
	Actor    string            `json:"actor"`
	Created  time.Time         `json:"created"`
}

// Suspension stops new revisions of every release on one cluster.
type Suspension struct {
	Cluster string    `json:"cluster"`
	Reason  string    `json:"reason,omitempty"`
	Actor   string    `json:"actor"`
	Since   time.Time `json:"since"`
}

// DecodeFreeze reads the freeze record key (its ID) last written at updated. A record that
// does not decode is returned, with the error, as a freeze of every release on every
// cluster created at updated: a gate is never opened because the hub could not read it.
func DecodeFreeze(key string, data []byte, updated time.Time) (Freeze, error) {
	var f Freeze
	err := json.Unmarshal(data, &f)
	if err != nil {
		f = Freeze{Reason: fmt.Sprintf("freeze record %q does not decode: %v", key, err), Created: updated}
		err = fmt.Errorf("freeze record %q: %w", key, err)
	}
	f.ID = key
	return f, err
}

// DecodeSuspension reads the suspension record of cluster key last written at updated. A
// record that does not decode is returned, with the error, as a suspension of that cluster
// since updated.
func DecodeSuspension(key string, data []byte, updated time.Time) (Suspension, error) {
	var s Suspension
	err := json.Unmarshal(data, &s)
	if err != nil {
		s = Suspension{Reason: fmt.Sprintf("suspension record does not decode: %v", err), Since: updated}
		err = fmt.Errorf("suspension record of cluster %q: %w", key, err)
	}
	s.Cluster = key
	return s, err
}

// Covers reports whether f applies to a cluster with labels.
func (f Freeze) Covers(labels map[string]string) bool {
	return v1alpha1.LabelSelector{MatchLabels: f.Selector}.Matches(labels)
}

// Gate is the gate of f on a cluster it covers.
func (f Freeze) Gate() window.Gate {
	g := window.Gate{Name: f.ID, Kind: window.KindFreeze, Type: v1alpha1.WindowDeny, Reason: f.Reason, Actor: f.Actor}
	if f.Release != "" {
		g.Releases = []string{f.Release}
	}
	return g
}

// Gate is the gate of s on its cluster.
func (s Suspension) Gate() window.Gate {
	return window.Gate{Name: s.Cluster, Kind: window.KindSuspend, Type: v1alpha1.WindowDeny, Reason: s.Reason, Actor: s.Actor}
}

// IsFreeze reports whether g is the gate of a freeze.
func IsFreeze(g window.Gate) bool { return g.Kind == window.KindFreeze }

// IsClusterSuspension reports whether g is the gate of a cluster's suspension: a suspension
// that names no release (one naming releases is theirs, from the configuration).
func IsClusterSuspension(g window.Gate) bool {
	return g.Kind == window.KindSuspend && len(g.Releases) == 0
}
