package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cirello.io/dynamolock/v2"

	"github.com/hustings/hustings/backends/dynamodb/dynamotest"
)

// dynamolockTable is the peer's table, made as dynamolock makes it (its
// partition key "key").
const dynamolockTable = "bench_dynamolock"

// dynamolockLease, dynamolockHeartbeat and dynamolockRefresh are the
// peer's settings: a lease of the order of Hustings' TTLs, heartbeats at
// a third of it (dynamolock wants at most half), and a waiter that
// reads the lock item every 100 ms.
const (
	dynamolockLease     = 6 * time.Second
	dynamolockHeartbeat = 2 * time.Second
	dynamolockRefresh   = 100 * time.Millisecond
)

// dynamoPeers is cirello.io/dynamolock/v2, the DynamoDB lock client Go
// services use (Amazon's lock client's design: a lease judged by the
// waiter's clock on an unchanged record version number), one client per
// candidate on the server at endpoint.
func dynamoPeers(endpoint string) []peer {
	return []peer{{
		name: "dynamolock",
		note: fmt.Sprintf("cirello.io/dynamolock/v2 v2.1.0, a client per candidate: lease %v, heartbeat every %v, a waiter reads the item every %v; "+
			"released by a delete; no fencing token but the record version number", dynamolockLease, dynamolockHeartbeat, dynamolockRefresh),
		gap: dynamolockRefresh,
		open: func(context.Context) (locker, error) {
			c, err := dynamolock.New(dynamotest.NewClient(endpoint), dynamolockTable,
				dynamolock.WithLeaseDuration(dynamolockLease), dynamolock.WithHeartbeatPeriod(dynamolockHeartbeat))
			if err != nil {
				return nil, err
			}
			return dynamoLocker{c}, nil
		},
	}}
}

// createDynamolockTable makes the peer's table on the server at endpoint.
func createDynamolockTable(ctx context.Context, endpoint string) error {
	c, err := dynamolock.New(dynamotest.NewClient(endpoint), dynamolockTable, dynamolock.DisableHeartbeat())
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.CreateTableWithContext(ctx, dynamolockTable)
	return err
}

type dynamoLocker struct{ c *dynamolock.Client }

// run waits for the lock, reading its item every dynamolockRefresh,
// until ctx ends (dynamolock gives up after a lease plus the additional
// wait, made as long as the bench's longest wait here).
func (d dynamoLocker) run(ctx context.Context, name string, cs func()) error {
	l, err := d.c.AcquireLockWithContext(ctx, name,
		dynamolock.WithRefreshPeriod(dynamolockRefresh),
		dynamolock.WithAdditionalTimeToWaitForLock(time.Hour),
		dynamolock.WithDeleteLockOnRelease())
	if err != nil {
		return err
	}
	cs()
	ok, err := d.c.ReleaseLockWithContext(ctx, l)
	if err == nil && !ok {
		err = errors.New("dynamolock: the lock was not held at release")
	}
	return err
}

func (d dynamoLocker) close() { _ = d.c.Close() }
