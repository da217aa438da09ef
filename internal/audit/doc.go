// Package audit is the hub's tamper-evident audit trail: an append-only, hash-chained log of
// who changed what, when and where.
//
// # Records
//
// Every change is an Event (actor, action, cluster, release, free-form detail). Append gives
// it the next sequence number and chains it to the record before: its Hash is the SHA-256 of
// a canonical encoding of the record's fields and the previous record's hash (see hashRecord),
// and the first record's PrevHash is 64 zeros. The log lives in its own SQLite file (audit.db
// in the hub's data dir), apart from the store, so that it can be copied, shipped or kept on
// other media without the rest of the hub's state.
//
// # Checkpoints
//
// Agents check every assignment at its interval, and most checks change nothing. A check
// that changed nothing does not append a record: it updates the assignment's Checkpoint
// (kept in the hub's store, beside the chain), and Step decides when the checkpoint itself
// goes into the chain, as an ActionVerified record of the window of unchanged checks, at
// most once per checkpoint interval per assignment. A change is always a full record, and
// carries the window it closes. So the chain still shows, for every assignment, the state
// it was verified at and when, with no gap, at a small fraction of the bytes.
//
// # Verification
//
// Verify walks the whole chain and reports the first broken record as a *ChainError:
//   - a record whose stored hash does not match its content was edited;
//   - a gap in the sequence, or a PrevHash that does not match the record before, means a
//     record was deleted or inserted (or edited and re-hashed);
//   - a head row (last seq and hash), written in the same transaction as every append,
//     detects a truncated tail.
//
// What this detects is an edit by anyone who does not also rewrite every later record and the
// head. Against someone who holds the file and does, keep the head elsewhere: Head returns it,
// and `flotilla audit verify` prints it, so a copy taken now exposes any later rewrite of the
// history before it.
//
// # Streaming
//
// A [Sink] sends every record, in sequence order and at least once, to an HTTP receiver, in
// batches of JSON Lines (or JSON arrays) with the fields ExportJSONL writes and the detail as
// the exact text that was hashed, so a receiver can check the chain. The last seq the
// receiver acknowledged (the cursor) is kept in the same file (table sink_cursor, one row per
// URL), apart from the chain: Verify neither reads nor needs it. Failures are retried with
// jittered exponential backoff, honouring Retry-After, and nothing is skipped.
//
// # Concurrency
//
// Appends are serialised on one writer connection (BEGIN IMMEDIATE); reads (List,
// ExportJSONL, Verify) use separate read-only connections and, in WAL mode, run alongside the
// writer, each on one consistent snapshot.
package audit
