// Package dynamotest runs dynalite, a server that speaks DynamoDB's API,
// for the tests and benchmarks of package dynamodb: a Node.js process on a
// free loopback port, its tables in memory (or, with Persistent, in a
// LevelDB store in a temporary directory that Stop removes), stopped by
// PID (never by name). For tests and benchmarks only.
//
// The server is dynalite at Version, installed from the npm registry by the
// repository's tools/dynalite/install.sh, once per machine, into the user
// cache (`make dynalite`, which `make test` runs first; about 20 s). CLI
// says where it is looked for. When it is missing, Start fails the test,
// saying how to install it: the tests are never skipped. Nothing is
// downloaded when the tests run. It needs Node.js (20 or later) on the
// PATH, or at $HUSTINGS_NODE.
//
// Start is for tests (it stops the server when the test ends); StartServer
// and Stop are for code without a testing.TB, such as benchmarks in
// another module. Client and NewClient make a client of the server. A
// Server is safe for concurrent use.
//
// # What dynalite is not
//
// dynalite is a stand-in for DynamoDB, not DynamoDB: a test that passes on
// it proves the backend against what it implements. dynalite 4.0.0
// (TestConditionalWrites holds to the server what the backend is built on,
// TestGaps each thing missing):
//
// Implemented:
//   - CreateTable (PAY_PER_REQUEST or provisioned), DescribeTable,
//     GetItem (ConsistentRead), PutItem, UpdateItem, DeleteItem, Query,
//     Scan, the Batch operations;
//   - ConditionExpression: attribute_not_exists, comparisons on a version
//     number; a failed condition is ConditionalCheckFailedException;
//   - UpdateItem ADD on a number (a counter from nothing), with
//     ReturnValues UPDATED_NEW.
//   - atomic conditional writes: dynalite locks an item's key from its
//     read to its write, so of clients swapping one version at once one
//     wins (TestConcurrentSwaps).
//
// Not implemented:
//   - transactions: TransactWriteItems and TransactGetItems answer
//     UnknownOperationException;
//   - TTL: UpdateTimeToLive answers UnknownOperationException,
//     DescribeTimeToLive says DISABLED, nothing expires;
//   - streams: a StreamSpecification is ignored, no table has a stream
//     (and there is no DynamoDB Streams API);
//   - PartiQL: ExecuteStatement answers UnknownOperationException;
//   - ReturnValuesOnConditionCheckFailure: a failed condition returns no
//     item even when asked, so a backend reads the item back itself.
//
// Nor does it model DynamoDB's latencies, throttling, eventual
// consistency of reads that are not ConsistentRead, or errors on writes
// that may have succeeded (dynamolock #280): fault tests make those with
// Kill, Restart and proxies.
package dynamotest
