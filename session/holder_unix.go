//go:build !windows

package session

import (
	"os"
	"syscall"
)

// processAlive checks a local process with signal 0, which delivers nothing
// and fails when no such process exists.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}
