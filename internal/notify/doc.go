// Package notify turns the fleet's status into notifications: failed, drifted, skewed,
// unreachable and recovered assignments, sent to a generic JSON webhook or a Slack-compatible
// incoming webhook, de-duplicated and rate-limited.
//
// # Engine
//
// [Evaluate] is a pure function, in the manner of raft's state machine: it takes the
// notification's [Rules], its [State] from the last evaluation and a [Snapshot] of every
// assignment (a release on a cluster) and returns the next State and the [Event]s to send. It
// does no I/O and reads no clock, so its table tests run in microseconds; the hub calls it
// every few seconds.
//
// An assignment is in a condition when:
//   - failed: its phase is Failed, or it reports conflicts;
//   - drifted: its cluster reports objects changed by hand;
//   - skewed: its applied revision has differed from the desired one for at least
//     Rules.SkewAfter (a rollout in progress is not news), on a cluster that is not
//     unreachable (which explains it);
//   - unreachable: its cluster's agent was heard from once but not lately (a cluster whose
//     agent never connected never reaches the desired revision, so it shows as skewed).
//
// An event is sent when an assignment enters a condition the notification has not announced
// yet; "recovered" is sent once every announced condition has ended and the assignment is on
// its desired revision, Ready and reachable. So a condition that lasts produces one event,
// not one per evaluation. An assignment that enters a condition again within Rules.FlapWindow
// of the last announcement of it is flapping: the event is held until the window has passed,
// and then sent only if the condition still holds, with the number of flaps held back.
//
// While the hub cannot yet tell reachability (just after it started, agents have not had the
// time to reconnect: Snapshot.ReachabilityKnown is false), unreachable keeps its last value,
// so a hub restart does not announce the whole fleet unreachable and then recovered.
//
// State is plain data (JSON), which the hub persists: after a restart nothing already
// announced is announced again, and what happened while the hub was down is.
//
// # Delivery
//
// A [Throttle] (a token bucket per notification, golang.org/x/time/rate) turns the events of
// an evaluation into at most one [Message]; what it holds back is counted and summarised in
// the next message. [WebhookBody] and [SlackBody] build the request bodies, and a [Sender]
// POSTs them, retrying network errors, 5xx and 429 (honouring Retry-After) with jittered
// exponential backoff.
//
// # Runner
//
// A [Runner] is the loop around them: every Options.Interval it takes the status view
// through [Deps], evaluates each configured notification, adds the rollout events queued by
// [Runner.Rollout], throttles, and hands each message to a delivery goroutine of that
// notification (a bounded queue; what does not fit is summarised later). It persists the
// States in Deps.StateFile. It reads the hub only through Deps, so this package links
// nothing of internal/hub; the hub wires it.
package notify
