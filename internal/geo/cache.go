package geo

import (
	"math/bits"
	"sync/atomic"
)

// entry is one composed record, keyed by its source and its offset in that
// source's data section (maxminddb's Result.Offset identifies the record).
// Entries are immutable once stored.
type entry[T any] struct {
	src uint32
	off uintptr
	v   T
}

// cache is a two-way set-associative, lock-free cache of composed
// records: a lookup is at most two atomic loads from one cache line and a
// key compare; a miss composes the record and stores it first in its set,
// moving the previous first to second place. Two ways rather than one
// keep two hot records whose offsets hash alike from evicting each other
// on every lookup. Racing stores may drop an entry, which only costs a
// later miss. The cache belongs to one generation and dies with it, so
// offsets never outlive their file.
type cache[T any] struct {
	slots []atomic.Pointer[entry[T]]
	shift uint
}

// newCache returns a cache of at least n slots (a power of two, at least
// two), or nil for n <= 0, which caches nothing.
func newCache[T any](n int) *cache[T] {
	if n <= 0 {
		return nil
	}
	b := max(bits.Len(uint(n-1)), 1)
	return &cache[T]{slots: make([]atomic.Pointer[entry[T]], 1<<b), shift: uint(64 - b)}
}

// set returns the index of the first slot of the key's set.
func (c *cache[T]) set(src uint32, off uintptr) uint64 {
	// Fibonacci hashing spreads the offsets, which are clustered and
	// share low bits, over the whole table.
	h := ((uint64(off) ^ uint64(src)<<56) * 0x9E3779B97F4A7C15) >> c.shift
	return h &^ 1 & uint64(len(c.slots)-1)
}

func (c *cache[T]) get(src uint32, off uintptr) *entry[T] {
	if c == nil {
		return nil
	}
	i := c.set(src, off)
	if e := c.slots[i].Load(); e != nil && e.off == off && e.src == src {
		return e
	}
	if e := c.slots[i+1].Load(); e != nil && e.off == off && e.src == src {
		return e
	}
	return nil
}

func (c *cache[T]) put(e *entry[T]) {
	if c == nil {
		return
	}
	i := c.set(e.src, e.off)
	if old := c.slots[i].Swap(e); old != nil && (old.off != e.off || old.src != e.src) {
		c.slots[i+1].Store(old)
	}
}
