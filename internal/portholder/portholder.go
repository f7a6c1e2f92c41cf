// Package portholder names the process that holds a TCP port, so that "address
// already in use" can say who uses it. It reads Linux's /proc; elsewhere, and
// for processes of other users, it finds nothing and says so by returning "".
package portholder

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// procRoot is /proc, a variable for tests.
var procRoot = "/proc"

// Explain adds to a listen error for a port in use which process holds the
// port, when it can tell; any other error is returned as is.
func Explain(err error) error {
	var op *net.OpError
	if !errors.Is(err, syscall.EADDRINUSE) || !errors.As(err, &op) {
		return err
	}
	addr, ok := op.Addr.(*net.TCPAddr)
	if !ok || addr.Port == 0 {
		return err
	}
	if who := Holder(addr.Port); who != "" {
		return fmt.Errorf("%w: port %d is held by %s", err, addr.Port, who)
	}
	return fmt.Errorf("%w: port %d is held by another process", err, addr.Port)
}

// Holder names the process listening on TCP port, "pid N (command line)",
// or "" when it cannot be found.
func Holder(port int) string {
	inodes := map[string]bool{}
	for _, f := range []string{"net/tcp", "net/tcp6"} {
		listening(filepath.Join(procRoot, f), port, inodes)
	}
	if len(inodes) == 0 {
		return ""
	}
	procs, err := os.ReadDir(procRoot)
	if err != nil {
		return ""
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		if holds(filepath.Join(procRoot, p.Name(), "fd"), inodes) {
			return fmt.Sprintf("pid %d (%s)", pid, command(filepath.Join(procRoot, p.Name(), "cmdline")))
		}
	}
	return ""
}

// listening adds the socket inodes of file's (/proc/net/tcp format)
// listening sockets on port.
func listening(file string, port int, inodes map[string]bool) {
	f, err := os.Open(file)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	want := fmt.Sprintf(":%04X", port)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || !strings.HasSuffix(fields[1], want) || fields[3] != "0A" {
			continue
		}
		inodes["socket:["+fields[9]+"]"] = true
	}
}

func holds(fdDir string, inodes map[string]bool) bool {
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && inodes[target] {
			return true
		}
	}
	return false
}

// command reads a process's command line, shortened for one log line.
func command(file string) string {
	f, err := os.Open(file)
	if err != nil {
		return "command unknown"
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 4096))
	s := strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	if s == "" {
		return "command unknown"
	}
	return s
}
