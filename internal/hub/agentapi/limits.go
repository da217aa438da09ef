package agentapi

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/flotilla/flotilla/internal/keyrate"

	"connectrpc.com/connect"
	"golang.org/x/time/rate"

	"github.com/flotilla/flotilla/internal/clock"
	"github.com/flotilla/flotilla/internal/hubclient"
	agentv1 "github.com/flotilla/flotilla/proto/flotilla/agent/v1"
	"github.com/flotilla/flotilla/proto/flotilla/agent/v1/agentv1connect"
)

// The report queue: Report calls are decoded and ingested MaxInflightReports at once; up to
// reportsWaitingPerSlot times as many wait their turn, round-robin across clusters, each at
// most reportHold, their bodies unread. What a waiting report may make the hub hold is its
// stream's receive window (server.go): 256 waiting at the default 64 slots x 256 KiB is
// 64 MiB at most, whatever the agents send.
const (
	reportsWaitingPerSlot = 4
	reportHold            = 10 * time.Second
)

// The download queue (queue.go): at most this many waiting downloads per download slot (4,096
// at the default 16 slots; each holds its handler goroutine and headers), each held at most
// artifactHold. A minute serves tens of thousands of small artifacts; a download that waited
// that long is told when its turn should come.
const (
	artifactQueuePerSlot = 256
	artifactHold         = time.Minute
)

// The join queue: joins do their store work (token, certificate, report sequence) at most
// joinSlots at once; up to maxJoinsWaiting wait, each at most joinHold, which is shorter
// than the 30 s an agent waits for its join's answer.
const (
	joinSlots       = 8
	maxJoinsWaiting = 4096
	joinHold        = 20 * time.Second
)

// limiter sheds load on the agent endpoint before it costs memory or store work:
//
//   - a global token bucket in front of every authenticated route;
//   - a token bucket per cluster identity, checked once requireAgent knows the cluster;
//   - a queue in front of artifact downloads (each holds a file and a slow client): a
//     bounded number served at once, the others waiting their turn, round-robin across
//     clusters (queue.go);
//   - a queue in front of Join's store work, round-robin across client addresses, behind
//     each address's bucket of failed joins (joinlimit.go);
//   - a bound on Report calls being decoded and ingested at once, so a report storm costs at
//     most MaxInflightReports x maxMessageBytes of request bodies however many agents send
//     (plus what HTTP/2 flow control lets each waiting request buffer, 1 MiB by default).
//
// A refused request gets resource_exhausted (HTTP 429 for unary calls and plain GETs) with a
// Retry-After in whole seconds. Nothing is read from a refused request's body.
type limiter struct {
	clock  clock.Clock
	global *rate.Limiter

	agents *keyrate.Buckets[string] // by cluster

	artifacts, joins, reports *queue
	errs                      *connect.ErrorWriter

	log     *slog.Logger
	refused atomic.Int64 // since the last warning
	warned  atomic.Int64 // unix nanoseconds of the last warning
}

// shedWarnEvery spaces the warnings that say the hub is shedding load.
const shedWarnEvery = 10 * time.Second

func newLimiter(o Options, c clock.Clock, log *slog.Logger, m *Metrics) *limiter {
	if m == nil {
		m = NewMetrics() // not registered: tests that do not look at them
	}
	slots := max(o.MaxArtifactDownloads, 1)
	return &limiter{
		clock:     c,
		global:    rate.NewLimiter(rate.Limit(o.GlobalQPS), o.GlobalBurst),
		agents:    keyrate.New[string](c, o.AgentQPS, o.AgentBurst, 0),
		artifacts: newQueue("artifacts", c, slots, slots*artifactQueuePerSlot, artifactHold, m),
		joins:     newQueue("joins", c, joinSlots, maxJoinsWaiting, joinHold, m),
		reports:   newQueue("reports", c, o.MaxInflightReports, o.MaxInflightReports*reportsWaitingPerSlot, reportHold, m),
		errs:      connect.NewErrorWriter(),
		log:       log,
	}
}

// limitGlobal applies the global bucket to every request.
func (l *limiter) limitGlobal(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wait := take(l.global, l.clock.Now()); wait > 0 {
			l.refuse(w, r, "hub busy: too many agent requests", wait)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// limitAgent applies the bucket of the cluster requireAgent established.
func (l *limiter) limitAgent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cluster := clusterFrom(r.Context())
		if wait := take(l.agents.Get(cluster), l.clock.Now()); wait > 0 {
			l.refuse(w, r, fmt.Sprintf("cluster %q: too many requests", cluster), wait)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// limitArtifacts queues artifact downloads, each cluster taking its turn.
func (l *limiter) limitArtifacts(next http.Handler) http.Handler {
	return l.queued(l.artifacts, "artifact download", clusterFrom, next)
}

// queued serves next once q gives the request a slot, key saying whose turn it is. A request
// turned away is answered with when to come back; one whose client left is not answered.
func (l *limiter) queued(q *queue, what string, key func(context.Context) string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		away, err := q.acquire(r.Context(), key(r.Context()))
		if err != nil {
			return // the client went away: nobody to answer
		}
		if away != nil {
			l.turnAway(w, r, what, q, away)
			return
		}
		defer q.release()
		next.ServeHTTP(w, r)
	})
}

// turnAway answers a request q did not serve. A full queue's Retry-After is the time its
// waiting requests take to be served, spread (retryAfterSeconds) because the requests it
// refuses arrive together; a request that waited the hold is told its own turn, exactly.
func (l *limiter) turnAway(w http.ResponseWriter, r *http.Request, what string, q *queue, away *turnedAway) {
	if away.full {
		l.refuse(w, r, fmt.Sprintf("hub busy: %d %ss waiting, the most the hub queues", away.waiting, what), away.retry)
		return
	}
	l.refuseAfter(w, r, fmt.Sprintf("hub busy: the %s waited %s for a slot, %d waiting", what, q.hold, away.waiting), wholeSeconds(away.retry))
}

// limitReports queues Report calls, each cluster taking its turn; other procedures pass
// through.
func (l *limiter) limitReports(next http.Handler) http.Handler {
	queued := l.queued(l.reports, "report", clusterFrom, next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == agentv1connect.AgentServiceReportProcedure {
			queued.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// take takes a token from lim, or returns how long until one is available (without taking it).
func take(lim *rate.Limiter, now time.Time) time.Duration {
	res := lim.ReserveN(now, 1)
	if !res.OK() { // burst 0: nothing is ever allowed
		return time.Minute
	}
	wait := res.DelayFrom(now)
	if wait > 0 {
		res.CancelAt(now)
	}
	return wait
}

// refuse answers resource_exhausted with a Retry-After of wait, spread (retryAfterSeconds).
func (l *limiter) refuse(w http.ResponseWriter, r *http.Request, msg string, wait time.Duration) {
	l.refuseAfter(w, r, msg, retryAfterSeconds(wait))
}

// refuseAfter answers resource_exhausted in the protocol the request speaks (Connect unary:
// HTTP 429 and JSON; Connect streaming: an end-of-stream message; plain HTTP: 429 and JSON)
// with Retry-After secs in the response headers or, for streams, the trailers, so that
// connect clients find it in the error's Meta.
func (l *limiter) refuseAfter(w http.ResponseWriter, r *http.Request, msg string, secs int) {
	err := connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("%s; retry in %ds", msg, secs))
	err.Meta().Set("Retry-After", strconv.Itoa(secs))
	_ = l.errs.Write(w, r, err)
	l.refused.Add(1)
	now, last := l.clock.Now().UnixNano(), l.warned.Load()
	if now-last >= int64(shedWarnEvery) && l.warned.CompareAndSwap(last, now) {
		l.log.Warn("shedding load: agent requests refused with Retry-After", "refused", l.refused.Swap(0), "latest", err.Message())
	}
}

// wholeSeconds is a wait as a Retry-After: whole seconds, rounded up, at least 1.
func wholeSeconds(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}

// retryAfterSeconds turns a wait into a Retry-After value: whole seconds, rounded up, at least
// 1, plus a random spread of up to a quarter (at least a second) so that agents refused
// together do not come back together.
func retryAfterSeconds(wait time.Duration) int {
	s := wholeSeconds(wait)
	return s + rand.N(max(1, s/4)+1)
}

// Bounds of what one status may carry beyond its counts: the per-object detail and the
// conflict texts. Agents keep within tighter bounds of their own (internal/agent, details.go);
// these protect the hub, its store and the dashboards that read the detail back from any
// client. A status beyond them is refused with the report, as an oversized message is.
const (
	maxObjectDetails   = 200
	maxDetailFields    = 64   // drift and conflict entries of one object
	maxDetailString    = 4096 // bytes of any one string: a value, a message, a conflict text
	maxStatusDetailLen = 512 << 10
)

// checkStatus refuses a status whose detail or conflict texts exceed the bounds above,
// naming the release, the object and the field.
func checkStatus(st *agentv1.AssignmentStatus) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("release %q: %s", st.GetRelease(), fmt.Sprintf(format, args...))
	}
	if n := len(st.GetObjectDetails()); n > maxObjectDetails {
		return fail("%d object details; at most %d", n, maxObjectDetails)
	}
	for i, c := range st.GetConflicts() {
		if len(c) > maxDetailString {
			return fail("conflict %d: %d bytes; at most %d", i, len(c), maxDetailString)
		}
	}
	type field struct{ what, s string }
	total := 0
	for _, d := range st.GetObjectDetails() {
		obj := fmt.Sprintf("object %s/%s", d.GetKind(), d.GetName())
		if d.GetNamespace() != "" {
			obj += fmt.Sprintf(" in namespace %q", d.GetNamespace())
		}
		if n := len(d.GetDrift()) + len(d.GetConflicts()); n > maxDetailFields {
			return fail("%s: %d drift and conflict entries; at most %d", obj, n, maxDetailFields)
		}
		fields := []field{
			{"group", d.GetGroup()}, {"version", d.GetVersion()}, {"kind", d.GetKind()}, {"namespace", d.GetNamespace()},
			{"name", d.GetName()}, {"action", d.GetAction()}, {"health", d.GetHealth()}, {"health message", d.GetHealthMessage()},
			{"error", d.GetError()},
		}
		for j, f := range d.GetDrift() {
			fields = append(fields, field{fmt.Sprintf("drift %d path", j), f.GetPath()},
				field{fmt.Sprintf("drift %d desired value", j), f.GetDesired()}, field{fmt.Sprintf("drift %d live value", j), f.GetLive()})
		}
		for j, c := range d.GetConflicts() {
			fields = append(fields, field{fmt.Sprintf("conflict %d field", j), c.GetField()}, field{fmt.Sprintf("conflict %d owner", j), c.GetOwner()})
		}
		for _, f := range fields {
			if len(f.s) > maxDetailString {
				return fail("%s: %s: %d bytes; at most %d", obj, f.what, len(f.s), maxDetailString)
			}
			total += len(f.s)
		}
		if total > maxStatusDetailLen {
			return fail("object details of at least %d bytes; at most %d", total, maxStatusDetailLen)
		}
	}
	return checkRemoval(st, fail)
}

// maxRemovalObjects bounds the objects a removal report names (the agent sends at most 100).
const maxRemovalObjects = 100

// checkRemoval bounds a removal report; only phase Removed carries one.
func checkRemoval(st *agentv1.AssignmentStatus, fail func(string, ...any) error) error {
	rm := st.GetRemoval()
	if rm == nil {
		return nil
	}
	if hubclient.Phase(st.GetPhase()) != hubclient.PhaseRemoved {
		return fail("a removal with phase %q; only phase %s carries one", st.GetPhase(), hubclient.PhaseRemoved)
	}
	for what, list := range map[string][]string{"pruned objects": rm.GetPrunedObjects(), "kept objects": rm.GetKeptObjects()} {
		if len(list) > maxRemovalObjects {
			return fail("removal: %d %s; at most %d", len(list), what, maxRemovalObjects)
		}
		for _, o := range list {
			if len(o) > maxDetailString {
				return fail("removal: %s: an entry of %d bytes; at most %d", what, len(o), maxDetailString)
			}
		}
	}
	for what, v := range map[string]string{"reason": rm.GetReason(), "fleet revision": rm.GetFleetRevision(), "actor": rm.GetActor()} {
		if len(v) > maxDetailString {
			return fail("removal: %s of %d bytes; at most %d", what, len(v), maxDetailString)
		}
	}
	return nil
}
