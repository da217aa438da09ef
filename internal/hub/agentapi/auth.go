package agentapi

import (
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"
)

// Auth remembers, per client certificate chain, what requireAgent established about it,
// so that an idle agent's heartbeat does not pay an ECDSA chain verification and a store
// lookup each time (together most of an idle hub's CPU).
//
// The verification (chain to the hub's CA, cluster, serial) depends only on the certificate
// bytes and the time, so it is kept while the certificates are within their validity.
// Whether the certificate is still valid in the store (not revoked) is kept for
// RevocationTTL. Certificates are revoked by removing or rotating their cluster, which
// invalidates the cluster's entries at once here (ForgetCluster) and on the other replicas
// when the fan-out's notification arrives, so a removed cluster is refused on its very next
// request; and by a renewal, once the new certificate is used (ForgetSerial here, the TTL
// elsewhere).
// The TTL bounds only what a replica that missed notifications (its listening connection
// down) may still accept; it clears everything when it listens again (ForgetAll).
type Auth struct {
	ttl time.Duration
	mu  sync.Mutex
	// epoch rises on every invalidation: a store answer read before an invalidation is not
	// cached after it, or a removal racing with a request could be forgotten.
	epoch   uint64
	entries map[[sha256.Size]byte]authEntry
	// sweepAt is the size at which put drops the entries whose store check expired, so that
	// the certificates agents renewed away from do not accumulate.
	sweepAt int
}

// RevocationTTL is how long a store answer "not revoked" is reused. An agent heartbeats every
// 30 s by default, so a shorter TTL would hardly ever be hit by an idle agent.
const RevocationTTL = 2 * time.Minute

type authEntry struct {
	cluster, serial     string
	notBefore, notAfter time.Time // of the whole chain, the CA included
	checked             time.Time // when the store last said the certificate is not revoked
	// replaces is the serial a renewed certificate replaced, until its revocation is done.
	replaces string
}

func NewAuth(ttl time.Duration) *Auth {
	return &Auth{ttl: ttl, entries: map[[sha256.Size]byte]authEntry{}, sweepAt: 1024}
}

// chainKey identifies a presented certificate chain by its bytes.
func chainKey(raw [][]byte) [sha256.Size]byte {
	h := sha256.New()
	for _, c := range raw {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(c))))
		h.Write(c)
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// lookup returns the entry for key, whether its verification still holds at now (the
// certificates are within their validity), whether its store check is fresh, and the epoch to
// pass to put.
func (a *Auth) lookup(key [sha256.Size]byte, now time.Time) (e authEntry, verified, fresh bool, epoch uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.entries[key]
	verified = ok && !now.Before(e.notBefore) && !now.After(e.notAfter)
	fresh = verified && now.Sub(e.checked) < a.ttl && !now.Before(e.checked)
	return e, verified, fresh, a.epoch
}

// put records that the store said e's certificate is not revoked at e.checked, unless an
// invalidation happened since epoch (then the answer may be stale and is dropped).
func (a *Auth) put(key [sha256.Size]byte, e authEntry, epoch uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if epoch != a.epoch {
		return
	}
	if len(a.entries) >= a.sweepAt {
		for k, old := range a.entries {
			if e.checked.Sub(old.checked) >= a.ttl {
				delete(a.entries, k)
			}
		}
		a.sweepAt = max(1024, 2*len(a.entries))
	}
	a.entries[key] = e
}

// ForgetCluster drops the cluster's entries: its certificates were revoked.
func (a *Auth) ForgetCluster(cluster string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.epoch++
	for k, e := range a.entries {
		if e.cluster == cluster {
			delete(a.entries, k)
		}
	}
}

// ForgetSerial drops the entries of the certificate with serial: it was revoked.
func (a *Auth) ForgetSerial(serial string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.epoch++
	for k, e := range a.entries {
		if e.serial == serial {
			delete(a.entries, k)
		}
	}
}

// ForgetAll drops every entry: revocations may have been missed.
func (a *Auth) ForgetAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.epoch++
	clear(a.entries)
}
