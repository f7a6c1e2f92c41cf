package session

import (
	"os"
	"strconv"
	"strings"
)

// holderIdentity names this process as a Lease holder: host/pid.
func holderIdentity() string {
	host, _ := os.Hostname()
	return host + "/" + strconv.Itoa(os.Getpid())
}

// holderAlive answers for a session Lease's holder, host/pid: a process on
// this host is checked (per OS, see processAlive); one elsewhere is assumed
// alive until its Lease expires.
func holderAlive(holder string) bool {
	host, pidText, ok := strings.Cut(holder, "/")
	me, _ := os.Hostname()
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || host != me {
		return true
	}
	return processAlive(pid)
}
