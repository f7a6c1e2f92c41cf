package inspector

import (
	"context"
	"os"
	"runtime"
)

// warmBytes is how much of a reserved arena Server.Start writes before the
// first reviews arrive: room for about 400 pod reviews of 10 KB. A page's
// first write costs a fault, ~20 µs in the VMs of bench/JOURNAL.md, and
// without this the first few hundred reviews each paid two or three.
const warmBytes = 4 << 20

// arena is the memory a Store keeps its reviews' bodies in: one region used
// as a ring in arrival order (Store.place), so that once the store is full
// a new review reuses the pages of the ones it replaces.
//
// Why not a slice per review: kept reviews on the heap raise the collector's
// goal, and the heap then grows into fresh pages for as long as the store
// fills (about 1,200 admissions at the default bounds; bench/JOURNAL.md,
// "Reviews kept outside the heap"), so every admission meanwhile paid
// first-touch page faults on its own allocations. Where the platform allows,
// the region is reserved outside the heap (mapRegion) and the heap stays the
// size it has with the inspector off; elsewhere it is a heap slice grown on
// demand up to the bound.
type arena struct {
	mem    []byte // len: the part used so far; cap: what is reserved
	bound  int
	mapped bool // mem is reserved outside the heap
	warmed int  // the end of what warm has written
}

// newArena reserves bound bytes for owner's bodies; the reservation is
// released once owner is unreachable (readers only ever hold copies).
func newArena(owner *Store, bound int) arena {
	mem, release := mapRegion(bound)
	if mem == nil {
		return arena{bound: bound}
	}
	runtime.AddCleanup(owner, release, mem)
	return arena{mem: mem[:0], bound: bound, mapped: true}
}

// slice returns the n bytes at off, growing the used part as needed;
// off+n is at most the bound.
func (a *arena) slice(off, n int) []byte {
	end := off + n
	if end > cap(a.mem) {
		// Only a heap arena grows: double, up to the bound.
		grown := make([]byte, len(a.mem), min(max(2*cap(a.mem), end), a.bound))
		copy(grown, a.mem)
		a.mem = grown
	}
	if end > len(a.mem) {
		a.mem = a.mem[:end]
	}
	return a.mem[off:end:end]
}

// warm writes a byte of each page in the next chunk of a reserved arena's
// unused part, up to upTo bytes, so that the kernel backs them now rather
// than while reviews are copied in; it reports whether it is done. Writing
// past len(mem) touches no kept review.
func (a *arena) warm(chunk, upTo int) bool {
	if !a.mapped {
		return true
	}
	upTo = min(upTo, a.bound)
	from := max(a.warmed, len(a.mem))
	to := min(from+chunk, upTo)
	room := a.mem[:cap(a.mem)]
	for off := from; off < to; off += pageSize {
		room[off] = 0
	}
	a.warmed = to
	return to >= upTo
}

var pageSize = os.Getpagesize()

// warm has the arena's first warmBytes backed by the kernel, a chunk at a
// time so that reviews recorded meanwhile wait at most one chunk for the
// lock. It returns when done or when ctx is.
func (s *Store) warm(ctx context.Context) {
	const chunk = 256 << 10
	for ctx.Err() == nil {
		s.mu.Lock()
		done := s.arena.warm(chunk, warmBytes)
		s.mu.Unlock()
		if done {
			return
		}
	}
}
