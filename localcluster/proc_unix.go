//go:build unix

package localcluster

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// cmdline is a process's arguments, or nil where /proc cannot tell (macOS,
// or the process is gone).
func cmdline(pid int) []string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
}

// haveProc reports whether /proc describes processes here (Linux).
func haveProc() bool {
	_, err := os.Stat("/proc/self/cmdline")
	return err == nil
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil {
		// "pid (comm) S ...": the state follows the last ')'.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return false
		}
	}
	return true
}

// ours reports whether pid is a live process of the cluster in workdir: its
// command line names the workdir (a pid file left by a reboot may name an
// unrelated process). Without /proc, a live pid is taken as ours.
func ours(pid int, workdir string) bool {
	if !alive(pid) {
		return false
	}
	if !haveProc() {
		return true
	}
	return strings.Contains(strings.Join(cmdline(pid), " "), workdir)
}

// processesNaming lists the live processes whose command line names dir/
// (Linux only; elsewhere the pid files are all there is).
func processesNaming(dir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self || !alive(pid) {
			continue
		}
		if strings.Contains(strings.Join(cmdline(pid), " "), dir+string(filepath.Separator)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func signal(pid int, kill bool) error {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	err := syscall.Kill(pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
