package userapi

import (
	"context"
	"fmt"
	"net/http"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/flotilla/flotilla/internal/hub/fleetview"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hubclient"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
)

// assignmentDetail answers hubclient.AssignmentDetail: one release on one cluster as its agent
// last reported it.
func (api *API) assignmentDetail(w http.ResponseWriter, r *http.Request) {
	out, err := api.assignmentView(r.Context(), r.PathValue("name"), r.PathValue("release"))
	if err != nil {
		writeViewError(w, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

func (api *API) assignmentView(ctx context.Context, cluster, release string) (hubclient.AssignmentDetail, error) {
	fd, err := api.loadFleet(ctx, hubclient.StatusFilter{Cluster: cluster, Release: release})
	if err != nil {
		return hubclient.AssignmentDetail{}, err
	}
	if len(fd.assignments) == 0 {
		return hubclient.AssignmentDetail{}, errUnknown{fmt.Sprintf("release %q is not assigned to cluster %q", release, cluster)}
	}
	out := hubclient.AssignmentDetail{Assignment: fd.assignments[0], ConflictTexts: []string{}, Objects: []hubclient.ObjectView{}}
	if ds, err := api.d.Store.GetDesiredState(ctx, cluster); err == nil {
		if as, err := api.d.Desired.Decode(cluster, ds.Document); err == nil {
			for _, a := range as {
				if a.Release == release {
					out.Desired = hubclient.DesiredSettings{
						Source: a.Source, Path: a.Path, Namespace: a.Namespace, Prune: a.Prune, SelfHeal: a.SelfHeal, Wait: a.Wait,
						Timeout: a.Timeout.String(), Interval: a.Interval.String(),
					}
				}
			}
		}
	}
	if len(fd.statuses) == 0 {
		return out, nil
	}
	out.Reported = true
	var st agentv1.AssignmentStatus
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(fd.statuses[0].Detail, &st); err != nil {
		// The summary is still right: it comes from the stored columns.
		api.d.Logger.Warn("assignment view: the report's detail is unreadable", "cluster", cluster, "release", release, "error", err)
		return out, nil
	}
	out.Created, out.Configured, out.Pruned, out.DurationSeconds = st.GetCreated(), st.GetConfigured(), st.GetPruned(), st.GetDurationSeconds()
	out.ConflictTexts = append(out.ConflictTexts, st.GetConflicts()...)
	out.Objects, out.ObjectsOmitted = fleetview.ReportedObjects(&st)
	return out, nil
}
