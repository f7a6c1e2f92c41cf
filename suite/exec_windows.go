package suite

import (
	"os"
	"os/exec"
)

// shellCommand runs command as a shell line, as a user types it.
func shellCommand(command string) *exec.Cmd { return exec.Command("cmd", "/C", command) }

// ownGroup does nothing: Windows has no process groups to signal; the
// server is stopped by killing its process.
func ownGroup(*exec.Cmd) {}

// terminate stops p: Windows has no SIGTERM to ask with.
func terminate(p *os.Process) { _ = p.Kill() }

// kill stops p at once.
func kill(p *os.Process) { _ = p.Kill() }
