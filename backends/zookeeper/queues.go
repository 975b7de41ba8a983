package zookeeper

import "slices"

// queueState is what a Backend knows of one lock name's queue: the nodes
// its sessions have in it, the Watches that follow it, and the latest
// listing of its children that one of its calls made, which Watch sets
// its watch from instead of listing again. It is kept while the Backend
// has a node in the queue or a Watch on it.
type queueState struct {
	mine    []string // child nodes of this Backend's sessions
	watches int      // Watches running on the name
	names   []string // the latest listing of the children, if gen > 0
	gen     uint64   // counts the listings
	// woke is the number of the latest listing that does not show a node
	// of the Backend's at the head, which ends a Watch's wait for one.
	woke uint64
	// listed is closed at the next such listing; nil until a Watch waits
	// for one.
	listed chan struct{}
	// confirmed is a node of the Backend's whose predecessor a Watch found
	// still there, after the listing it picked it from, and watches; ""
	// for none. The node's next Acquire takes it as its answer (see
	// confirmedHeld).
	confirmed string
}

// queueOf returns the state of name's queue, made if create is set; nil
// if there is none. b.mu must be held.
func (b *Backend) queueOf(name string, create bool) *queueState {
	q := b.queues[name]
	if q == nil && create {
		q = &queueState{}
		b.queues[name] = q
	}
	return q
}

// dropIdle forgets the queue of name once nothing needs it. b.mu must be
// held.
func (b *Backend) dropIdle(name string, q *queueState) {
	if len(q.mine) == 0 && q.watches == 0 {
		delete(b.queues, name)
	}
}

// track records child, a node of one of b's sessions queued on name, so
// that Watch watches its predecessor.
func (b *Backend) track(name, child string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queueOf(name, true)
	q.mine = append(q.mine, child)
}

// untrack forgets child of name.
func (b *Backend) untrack(name, child string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q := b.queueOf(name, false); q != nil {
		q.mine = slices.DeleteFunc(q.mine, func(c string) bool { return c == child })
		if q.confirmed == child {
			q.confirmed = ""
		}
		b.dropIdle(name, q)
	}
}

// listed records names, a listing of name's children just made, if the
// Backend has a node in the queue or a Watch on it, and wakes the Watches
// waiting for it, unless it shows a node of the Backend's at the head:
// then its session is taking the lock, and its waiter, about to end its
// watch, is best left undisturbed (see rearm).
func (b *Backend) listed(name string, names []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queueOf(name, false)
	if q == nil {
		return
	}
	q.names, q.gen = names, q.gen+1
	if first, hold := oldest(names); !hold && first != "" && slices.Contains(q.mine, first) {
		return
	}
	q.woke = q.gen
	if q.listed != nil {
		close(q.listed)
		q.listed = nil
	}
}

// latest returns the latest listing of name's children and its number;
// ok is false if there is none, or if it misses a node of the Backend's
// (made after it), so that it cannot tell what to watch.
func (b *Backend) latest(name string) (names []string, gen uint64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queueOf(name, false)
	switch {
	case q == nil:
		return nil, 0, false
	case q.gen == 0:
		return nil, 0, false
	}
	for _, c := range q.mine {
		if !slices.Contains(q.names, c) {
			return nil, q.gen, false
		}
	}
	return q.names, q.gen, true
}

// watching counts a Watch of name as running (on is true) or ended.
func (b *Backend) watching(name string, on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queueOf(name, true)
	if on {
		q.watches++
		return
	}
	q.watches--
	q.confirmed = "" // no watch may be left to clear it
	b.dropIdle(name, q)
}

// confirm records that a Watch watches the predecessor of child, a node
// of the Backend's, which was still there after the listing it was
// picked from; "" clears it (the watch fired).
func (b *Backend) confirm(name, child string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q := b.queueOf(name, false); q != nil {
		q.confirmed = child
	}
}

// confirmedHeld reports whether child, a queued node of the Backend's, has
// a predecessor that a Watch found there after the latest listing and
// that has not changed since (its watch has not fired): then child is
// not the oldest, and an Acquire can say so without a request. It
// answers one Acquire per watch set, the try right after the watch was
// set, so that the waiter's later tries (its polls) look at the queue and
// judge what is ahead.
func (b *Backend) confirmedHeld(name, child string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queueOf(name, false)
	if q == nil || q.confirmed != child {
		return false
	}
	q.confirmed = ""
	return true
}

// listingAfter returns a channel closed at the next listing of name
// that does not show a node of the Backend's at the head (see listed), or
// nil if one newer than gen was made already (or the queue is gone).
func (b *Backend) listingAfter(name string, gen uint64) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queueOf(name, false)
	if q == nil || q.woke > gen {
		return nil
	}
	if q.listed == nil {
		q.listed = make(chan struct{})
	}
	return q.listed
}

// target picks the child of name to watch from its children's names: ""
// for none. of is the Backend's own node whose turn it decides: the node
// right after it, or the node itself when the Backend's node is the
// oldest (its session holds the lock, or is about to); "" if the Backend
// has no node in the queue.
func (b *Backend) target(name string, names []string) (node, of string) {
	kids, hold := queue(names)
	switch {
	case hold:
		return holdNode, ""
	case len(kids) == 0:
		return "", ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var mine []string
	if q := b.queueOf(name, false); q != nil {
		mine = q.mine
	}
	for i := 1; i < len(kids); i++ {
		if slices.Contains(mine, kids[i].name) {
			return kids[i-1].name, kids[i].name
		}
	}
	if slices.Contains(mine, kids[0].name) {
		return kids[0].name, kids[0].name
	}
	return kids[0].name, ""
}
