//go:build !windows

package suite

import (
	"os"
	"os/exec"
	"syscall"
)

// shellCommand runs command as a shell line, as a user types it.
func shellCommand(command string) *exec.Cmd { return exec.Command("/bin/sh", "-c", command) }

// ownGroup starts cmd in a process group of its own: go run and make start
// children, which must stop with it.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// terminate asks p's process group to stop.
func terminate(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGTERM) }

// kill stops p's process group at once.
func kill(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
