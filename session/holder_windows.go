//go:build windows

package session

import "syscall"

// stillActive is GetExitCodeProcess's answer for a running process.
const stillActive = 259

// processAlive opens the process and asks for its exit code: Windows has no
// signal 0 (os.Process.Signal always fails there, which would make every
// live session look dead and be taken over).
func processAlive(pid int) bool {
	h, err := syscall.OpenProcess(syscall.PROCESS_QUERY_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer syscall.CloseHandle(h)
	var code uint32
	if err := syscall.GetExitCodeProcess(h, &code); err != nil {
		return false
	}
	return code == stillActive
}
