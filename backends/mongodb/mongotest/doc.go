// Package mongotest runs FerretDB, a server that speaks MongoDB's wire
// protocol, for the tests and benchmarks of package mongodb: a process on a
// free loopback port, its data in SQLite files (FerretDB's sqlite handler)
// in a temporary directory that Stop removes, stopped by PID (never by
// name). For tests and benchmarks only.
//
// The binary is FerretDB at Version, built from the Go module proxy by the
// repository's tools/ferretdb module, once per machine: `make ferretdb`
// (which `make test` runs first) or tools/ferretdb/build.sh, a few minutes
// cold. Binary says where it is looked for. When it is missing, Start
// fails the test, saying how to build it: the tests are never skipped.
// FerretDB v2 would need PostgreSQL's DocumentDB extension, which Debian
// lacks; v1 over SQLite needs nothing beside it (no PostgreSQL cluster to
// start per test, and it is pure Go). The server is a process of its own,
// so Kill crashes it, Restart brings it back on the same port and files,
// and Pause stalls it, as fault tests need.
//
// Start is for tests (it stops the server when the test ends); StartServer
// and Stop are for code without a testing.TB, such as benchmarks in
// another module. URI is the connection string; Connect and Client make a
// client of it with go.mongodb.org/mongo-driver/v2. A Server is safe for
// concurrent use.
//
// # What FerretDB is not
//
// FerretDB is a stand-in for MongoDB, not MongoDB: a test that passes on
// it proves the backend against what it implements. Of the MongoDB
// features a lock backend might use, FerretDB v1.24.2 over SQLite
// (TestCompareAndSwap, TestUniqueIndex and TestGaps hold each of these to
// the server):
//
// Implemented:
//   - findOneAndUpdate with upsert on _id, returning the new document;
//   - filters on a version field beside _id: one client's compare-and-swap
//     whose version is stale fails with a duplicate-key error (E11000),
//     the upsert's insert meeting the _id, as on MongoDB; but see
//     atomicity below;
//   - $set, and $inc (a counter counted up from nothing);
//   - $currentDate: a field set to the server's clock, in a plain update;
//   - unique indexes, on _id and on other fields; an insert is atomic:
//     of clients inserting one _id at once, exactly one wins, the others
//     get E11000 (TestConcurrentInserts).
//
// Not atomic: findOneAndUpdate and update (updateOne) read the matching
// document, then write it back by _id alone (FerretDB issue 2168, over
// SQLite and PostgreSQL alike: the handler is shared). Clients swapping
// one version at once each win it: in TestConcurrentSwapsAreNotAtomic,
// eight clients racing on one document win most versions several times
// over. A compare-and-swap by findOneAndUpdate, correct on MongoDB
// (single-document writes are atomic there), therefore grants a lock
// twice on FerretDB. A backend that must pass its tests here takes its
// atomic step from a unique key instead (an insert a version, or a
// document a term), or says that these tests cannot prove its
// findOneAndUpdate path.
//
// Not implemented (each refused with an error, never ignored):
//   - update pipelines (an update given as an array of stages):
//     findOneAndUpdate answers NotImplemented (238), "Aggregation
//     pipelines are not supported yet"; update answers TypeMismatch (14),
//     "expected type 'object'";
//   - $$NOW: only reachable in pipelines and $expr, and $expr's
//     comparison operators ($lt...) are NotImplemented: a lease cannot be
//     judged against the server's clock in a filter;
//   - TTL indexes: createIndexes with expireAfterSeconds is NotImplemented
//     (nothing is ever swept);
//   - change streams: watch ($changeStream) is NotImplemented; FerretDB is
//     not a replica set, so a backend polls.
//
// So a backend tested here judges expiry by a client-side lease, or by a
// time written with $currentDate and read back, and watches by polling;
// its use of pipelines, $$NOW, TTL indexes and change streams, where a
// real MongoDB offers them, is not proved by these tests.
package mongotest
