package deps

import (
	"sync"
	"sync/atomic"
	"time"
)

// A new process's first key is its record's: read, decoded, then a stat
// of every place the record lists. The decode runs on one goroutine, and
// on two cores it left the other idle for as long as it took (0.9 ms of
// 3.2 ms for 2,500 headers). The observations come first in a record, so
// recordCheck stats each chunk of them as soon as it is decoded, while the
// decoder goes on with the rest of the record: the answer is valid's,
// for the same observations, at the same moment's clock.

// recordCheck is memo.valid's stats, in chunks on a few goroutines, run
// over a record's observations while they are decoded. The decoder calls
// start once it knows their number, then decoded as each is done, and
// abort if the record turns out bad; wait returns valid's answer. valid
// itself runs the same workers over observations all there (ready nil).
type recordCheck struct {
	fsys *fileSystem
	now  time.Time
	seen []observation
	// ready[k] is closed once chunk k of seen is decoded (or the decode
	// failed); nil where seen is whole. published is the number of chunks
	// closed, for the decoder only.
	ready     []chan struct{}
	published int
	next      atomic.Int64
	failed    atomic.Bool
	wg        sync.WaitGroup
	// descriptors bounds the directories the goroutines hold open at
	// once (fdroom.go).
	descriptors descriptorBudget
}

// newRecordCheck returns a check of a record's places by fsys, with the
// clock read now, as valid reads it before its stats.
func newRecordCheck(fsys *fileSystem) *recordCheck {
	return &recordCheck{fsys: fsys, now: fsys.now()}
}

// start begins the check of seen, which the decoder fills in order. A
// record small enough for one chunk is checked by wait, after the decode,
// as valid checks it: no goroutine would repay its start.
func (c *recordCheck) start(seen []observation) {
	c.seen = seen
	chunks := (len(seen) + statChunk - 1) / statChunk
	if chunks <= 1 {
		return
	}
	c.ready = make([]chan struct{}, chunks)
	for k := range c.ready {
		c.ready[k] = make(chan struct{})
	}
	c.spawn(chunks)
}

// spawn starts the workers that stat the chunks of seen.
func (c *recordCheck) spawn(chunks int) {
	for range min(statWorkers(), chunks) {
		c.wg.Add(1)
		go c.work()
	}
}

// work checks chunks in order as they are decoded, until none is left or
// a place differs.
func (c *recordCheck) work() {
	defer c.wg.Done()
	var dirs *dirStats
	if c.fsys.stat == nil {
		dirs = &dirStats{budget: &c.descriptors} // large memos are where places share directories
		defer dirs.close()
	}
	n := len(c.seen)
	for !c.failed.Load() {
		i := int(c.next.Add(statChunk)) - statChunk
		if i >= n {
			return
		}
		if c.ready != nil {
			<-c.ready[i/statChunk]
			if c.failed.Load() {
				return
			}
		}
		if !validRange(c.fsys, dirs, c.now, c.seen[i:min(i+statChunk, n)], &c.failed) {
			c.failed.Store(true)
		}
	}
}

// decoded tells the check that seen[:n] is decoded. The decoder calls it
// with each n in turn, from 1 to len(seen).
func (c *recordCheck) decoded(n int) {
	if c.published < len(c.ready) && (n%statChunk == 0 || n == len(c.seen)) {
		close(c.ready[c.published])
		c.published++
	}
}

// abort ends the check of a record that failed to decode: it answers
// false, and its goroutines stop.
func (c *recordCheck) abort() {
	c.failed.Store(true)
	for ; c.published < len(c.ready); c.published++ {
		close(c.ready[c.published])
	}
}

// wait returns whether every place held, as valid would have answered.
func (c *recordCheck) wait() bool {
	if c.ready == nil {
		return !c.failed.Load() && validRange(c.fsys, nil, c.now, c.seen, nil)
	}
	c.wg.Wait()
	return !c.failed.Load()
}
