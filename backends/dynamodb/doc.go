// Package dynamodb keeps Hustings locks in one Amazon DynamoDB table,
// through github.com/aws/aws-sdk-go-v2/service/dynamodb and a
// *dynamodb.Client the caller makes: New never dials anything, and
// nothing here closes anything of the client's. It is a driver of the
// shared record core (backends/internal/record): sessions and locks are
// items with a record version, changed only by conditional writes.
//
// # The table
//
// Migrate makes the table (WithTable, default "hustings"; partition key
// pk, sort key sk, on demand) and is idempotent; New makes nothing. Every
// record is one item:
//
//   - session#<session ID>: one per Open: the candidate, the TTL and a
//     record version (ver), 1 at creation, one more at every renewal;
//     KeepAlive's UpdateItem is conditioned on the version it last wrote.
//   - lock#<name>: the holding session's ID, the candidate, the token, a
//     hold flag, a lease or hold in milliseconds, and ver. Every write of
//     it is a PutItem conditioned on ver (or on no item), and writes a new
//     ver, the counter's next value; a removal is a DeleteItem on ver.
//   - counter: one number, advanced by UpdateItem ADD for every lock
//     write and registry entry. A take's token is its value: strictly
//     increasing per table, across holders, restarts and expiries.
//   - group#<group>, sort key <session ID>: a registry entry, its order
//     a counter value kept from its first registration.
//
// Session items carry gc, Unix seconds a day past their TTL, for
// DynamoDB's time to live, which Migrate enables: a cleanup of crashed
// sessions' items, never a lease (it deletes within days). Lock items
// are kept, one small item per name ever used.
//
// # Leases, judged by the client
//
// DynamoDB has no clock a request can read or compare, so, as Amazon's
// DynamoDB lock client does, a lease is judged on each client's
// monotonic clock: a session (or a lock's lease, or a hold) whose
// version this client has seen unchanged for its TTL, counted from when
// the client first saw that version (the answer of the read that showed
// it), has expired. The owner counts its own session's life from the
// start of its last successful renewal (or creation), its own lease from
// the start of the write; the campaign's deadlines do the same.
//
// Before a session judged expired is treated as dead, the judging
// client deletes its item conditioned on the version it saw (ReadLock,
// Holder, Members do it): then a take of its locks is a PutItem
// conditioned on the lock item's version. Why this is safe:
//
//   - A version v of a session item was written by a renewal that
//     started at s; the owner believes itself alive until s+TTL, and not
//     after (it does not write a renewal past that deadline either).
//     Any other client first sees v in an answer that left the server
//     after v was written, so after s: its judgement "expired" comes at
//     least TTL after s, on a clock that runs at the owner's rate (the
//     campaign's safety margin covers a drift of rates, not of time).
//   - The kill is a DeleteItem on version v, the renewal an UpdateItem on
//     the version it last wrote: DynamoDB orders the two on the one item.
//     If the renewal comes first, the item holds v+1, the kill fails, and
//     the judging client starts its wait again from v+1 (it has now seen
//     a new version). If the kill comes first, every later renewal fails
//     its condition: the owner learns its session is gone (ErrSessionLost)
//     and never extends its deadline past s+TTL, so it cannot believe it
//     holds anything after the kill's judgement.
//   - Only then are the dead session's locks taken, each by a write on
//     the lock item's version: of several takers one wins.
//
// So a renewal restarts every waiter's observation, and no take happens
// while the owner's own deadline runs. A lease lock or a hold ends the
// same way, on its lock item's version alone (nothing renews a lease).
// The cost: a waiter that starts watching late waits a full TTL from
// its own first read, whatever the holder did before.
//
// # Lost answers
//
// A write whose answer is lost (a timeout, a 5xx) may have been applied
// (cirello-io/dynamolock #280), and a retry of it by the SDK then fails
// its condition. Every write here writes a version unique to it, so a
// failed or lost write reads the item back (or takes it from the failed
// condition's answer, where the server returns it) and adopts the write
// if the item holds its version. One that cannot read back returns
// ErrUnavailable; the core reads the lock again before any write and
// adopts a record naming its own session, and a renewal that finds a
// version written by its own lost write renews on it.
//
// # Costs
//
// Open is one PutItem. KeepAlive is one UpdateItem of the session item
// beside one BatchGetItem of the held locks' items (per 100): one round
// trip. Acquire reads the lock and the reader's session (one
// BatchGetItem, with the holder's session item when it is the one last
// seen, else a GetItem more), then, to take, the counter's ADD and the
// conditional PutItem. Release is one DeleteItem beside a read. Watches
// poll (WithPoll, default 1s) and also read a watched lock when its
// holder would expire as last seen: DynamoDB Streams are not used.
//
// # Fencing
//
// Fence checks that a lock is held under a token and puts the caller's
// item with that token in an attribute, conditioned on the attribute
// being no larger: once a later term wrote the item, no earlier term's
// write lands. See Fence for the one write it cannot refuse.
//
// # Tested against dynalite
//
// The tests run dynalite 4.0.0 (package dynamotest), a Node.js server
// that speaks DynamoDB's API on LevelDB: it proves the conditional
// writes, the ADD counter, BatchGetItem and Query the backend uses, on
// one node that applies each item's writes in order. It does not prove
// DynamoDB's own behaviour: its latencies and throttling, its
// replication (consistent reads are asked for everywhere), its answers
// to ReturnValuesOnConditionCheckFailure (dynalite returns no item, so
// the tests take the read-back path), its TTL sweep (dynalite has none;
// Migrate skips it), or IAM. The backend uses no transaction
// (dynalite has none, and one is not needed: see above), no stream, no
// PartiQL.
//
// # What it cannot promise
//
//   - Clock rates: a lease is TTL on the waiter's clock against TTL on
//     the owner's; a machine whose monotonic clock runs slow (or a VM
//     paused and resumed without the clock jumping) waits too little.
//     Wall clocks are never compared, so steps of them do not matter,
//     except for the gc sweep a day out.
//   - Pauses: a holder paused past its TTL loses the lock to another
//     while it may still act; only the token (Fence) protects the
//     resource from its late writes.
//   - Failover is a TTL after a waiter's first read, not after the
//     holder's last renewal: up to two TTLs for a waiter that arrived
//     just before the crash.
//   - Global tables replicate between regions asynchronously, last
//     writer wins: conditions are checked per region. Use the table in
//     one region only.
//   - A lock item deleted by an operator is noticed by the holder's next
//     KeepAlive, not pushed (Session.Losses is nil); deleting the counter item
//     starts tokens again from 1: never do it while tokens guard a
//     resource.
//
// A Backend is safe for concurrent use; so are its sessions.
package dynamodb
