package userapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/flotilla/flotilla/internal/audit"
	"github.com/flotilla/flotilla/internal/hub/httpapi"
	"github.com/flotilla/flotilla/internal/hubclient"
)

// maxAuditList bounds one JSON answer of GET /api/v1/audit; format=jsonl streams without a
// bound.
const (
	defaultAuditList = 1000
	maxAuditList     = 10000
)

// listAudit serves, of the records in the principal's scope (auditVisible), GET /api/v1/audit?since=RFC3339&cluster=&release=&action=&checkpoints=&limit=&format=.
// The default answer is a JSON array of the newest matching records (limit, default 1000, at
// most 10000) in sequence order; format=jsonl streams them as JSON Lines, all of them unless
// limit is given. checkpoints=false leaves out the checkpoint records (apply.verified);
// the default, true, keeps every record.
func (api *API) listAudit(w http.ResponseWriter, r *http.Request) {
	if api.d.Audit == nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, errors.New("the audit log is not open"))
		return
	}
	q := r.URL.Query()
	f := audit.Filter{Cluster: q.Get("cluster"), Release: q.Get("release"), Action: q.Get("action")}
	if s := q.Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("since %q: want an RFC 3339 time", s))
			return
		}
		f.Since = t
	}
	switch c := q.Get("checkpoints"); c {
	case "", "true":
	case "false":
		f.ExcludeActions = []string{audit.ActionVerified}
	default:
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("checkpoints %q: want true or false", c))
		return
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("limit %q: want a number >= 0", s))
			return
		}
		f.Limit = n
	}
	visible, err := api.auditVisible(r.Context())
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	switch q.Get("format") {
	case "jsonl":
		w.Header().Set("Content-Type", "application/jsonl")
		if err := api.d.Audit.ExportJSONL(r.Context(), &jsonlFilter{w: w, visible: visible}, f); err != nil {
			// Too late for an error status; cut the stream so the client sees it end badly.
			api.d.Logger.Warn("audit export", "error", err)
			panic(http.ErrAbortHandler)
		}
		return
	case "", "json":
	default:
		httpapi.WriteError(w, http.StatusBadRequest, fmt.Errorf("format %q: want json or jsonl", q.Get("format")))
		return
	}
	if f.Limit == 0 {
		f.Limit = defaultAuditList
	}
	f.Limit = min(f.Limit, maxAuditList)
	recs, err := api.d.Audit.List(r.Context(), f)
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	// The limit counts before the scope's filter: a scoped principal may get fewer.
	recs = filterRecords(recs, visible)
	out := make([]hubclient.AuditRecord, len(recs))
	for i, rec := range recs {
		out[i] = hubclient.AuditRecord{
			Seq: rec.Seq, Time: rec.Time, Actor: rec.Actor, Action: rec.Action, Cluster: rec.Cluster,
			Release: rec.Release, Detail: rec.Detail, PrevHash: rec.PrevHash, Hash: rec.Hash,
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
}

// verifyAudit serves GET /api/v1/audit/verify: 200 with the number of records checked and
// the head, or 409 naming the first broken record.
func (api *API) verifyAudit(w http.ResponseWriter, r *http.Request) {
	if api.d.Audit == nil {
		httpapi.WriteError(w, http.StatusServiceUnavailable, errors.New("the audit log is not open"))
		return
	}
	checked, err := api.d.Audit.Verify(r.Context())
	var ce *audit.ChainError
	if errors.As(err, &ce) {
		api.d.Logger.Error("audit log verification failed", "seq", ce.Seq, "error", err)
		httpapi.WriteError(w, http.StatusConflict, err)
		return
	}
	if err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	v := hubclient.AuditVerification{Checked: checked, OK: true}
	if v.HeadSeq, v.HeadHash, err = api.d.Audit.Head(r.Context()); err != nil {
		httpapi.WriteError(w, http.StatusInternalServerError, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, v)
}
