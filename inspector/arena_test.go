package inspector

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// body is the n bytes review id is made of, so that a body overwritten by
// another's shows.
func body(id uint64, n int) []byte {
	return bytes.Repeat([]byte{byte('a' + id%26)}, n)
}

// Reviews of random sizes through stores of random bounds: every kept
// review reads back as recorded, the bounds hold, dropped reviews read as
// gone, and the arena stays within its bound. Both arenas: reserved outside
// the heap (where the platform has one) and grown on the heap.
func TestArenaRing(t *testing.T) {
	for _, heap := range []bool{false, true} {
		for seed := uint64(1); seed <= 20; seed++ {
			t.Run(fmt.Sprintf("heap=%v/seed=%d", heap, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				keep, maxBytes := 1+rng.IntN(40), 64+rng.IntN(8000)
				s := NewStore(StoreOptions{Keep: keep, MaxBytes: int64(maxBytes)})
				if heap {
					s.arena = arena{bound: maxBytes}
				}
				var dropped []*entry
				for id := uint64(1); id <= 400; id++ {
					n := rng.IntN(maxBytes/3 + 1)
					if rng.IntN(20) == 0 {
						n = maxBytes + 1 // too big: kept without a body
					}
					before := s.kept()
					s.RecordServed(served(body(id, n), body(id+1, rng.IntN(3))))
					checkRing(t, s, keep, maxBytes)
					s.mu.Lock()
					for _, e := range before {
						if e.gone {
							dropped = append(dropped, e)
						}
					}
					s.mu.Unlock()
				}
				for _, e := range dropped {
					if r, a := e.bodies(); r != nil || a != nil {
						t.Fatalf("dropped review %d still reads a body", e.id)
					}
				}
			})
		}
	}
}

func checkRing(t *testing.T, s *Store, keep, maxBytes int) {
	t.Helper()
	kept := s.kept()
	n, used := s.usage()
	if len(kept) != n || n > keep || used > int64(maxBytes) {
		t.Fatalf("%d kept (usage %d, %d bytes), bounds %d and %d bytes", len(kept), n, used, keep, maxBytes)
	}
	var sum int64
	for _, e := range kept {
		review, answer := e.bodies()
		if e.tooBig {
			if review != nil {
				t.Fatalf("review %d is too big but has a body", e.id)
			}
			continue
		}
		if !bytes.Equal(review, body(e.id, e.reviewLen)) || !bytes.Equal(answer, body(e.id+1, e.answerLen)) {
			t.Fatalf("review %d reads back other bytes", e.id)
		}
		sum += int64(e.size())
	}
	if sum != used {
		t.Fatalf("usage says %d bytes, the kept reviews hold %d", used, sum)
	}
	if len(s.arena.mem) > maxBytes {
		t.Fatalf("arena uses %d bytes, bound %d", len(s.arena.mem), maxBytes)
	}
}

// Once full, the store reuses the pages of the reviews it drops: the part
// of the arena ever used stays near what the kept reviews need.
func TestArenaReusesPages(t *testing.T) {
	const keep, size = 50, 1000
	s := NewStore(StoreOptions{Keep: keep})
	for id := uint64(1); id <= 100*keep; id++ {
		s.RecordServed(served(body(id, size), nil))
	}
	if used := len(s.arena.mem); used > (keep+1)*size {
		t.Errorf("after %d reviews the arena has used %d bytes; %d kept need %d", 100*keep, used, keep, keep*size)
	}
}

// The point of the arena: what the inspector keeps does not grow the heap
// that admissions allocate from.
func TestArenaOffHeap(t *testing.T) {
	s := NewStore(StoreOptions{})
	if !s.arena.mapped {
		t.Skip("no region outside the heap on this platform: the arena grows on the heap")
	}
	review := body(1, 10<<10)
	live := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := live()
	for range DefaultKeep {
		s.RecordServed(served(review, nil))
	}
	grown := int64(live()) - int64(before)
	if kept := int64(DefaultKeep * len(review)); grown > kept/10 {
		t.Errorf("keeping %d bytes of reviews grew the heap by %d bytes", kept, grown)
	}
	runtime.KeepAlive(s)
}

// Writing the arena ahead leaves the reviews already kept as they were
// and covers warmBytes of a reserved arena.
func TestArenaWarm(t *testing.T) {
	s := NewStore(StoreOptions{Keep: 10})
	for id := uint64(1); id <= 5; id++ {
		s.RecordServed(served(body(id, 3000), body(id+1, 10)))
	}
	s.warm(t.Context())
	checkRing(t, s, 10, int(DefaultMaxBytes))
	if s.arena.mapped && s.arena.warmed != warmBytes {
		t.Errorf("warmed %d bytes, want %d", s.arena.warmed, warmBytes)
	}
	for id := uint64(6); id <= 30; id++ {
		s.RecordServed(served(body(id, 3000), body(id+1, 10)))
		checkRing(t, s, 10, int(DefaultMaxBytes))
	}
}
