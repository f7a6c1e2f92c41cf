//go:build linux || darwin

package inspector

import "syscall"

// mapRegion reserves n bytes of address space outside the Go heap. The
// kernel backs a page only once it is written, so a store that keeps little
// costs little; MAP_NORESERVE keeps the reservation from counting against
// the system's commit limit.
func mapRegion(n int) ([]byte, func([]byte)) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		// The heap does as well, only with more work for the collector.
		return nil, nil
	}
	return b, func(b []byte) { _ = syscall.Munmap(b) }
}
