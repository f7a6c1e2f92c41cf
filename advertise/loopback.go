package advertise

import (
	"context"
	"fmt"
	"net"
	"strings"
)

// Loopback picks 127.0.0.1 when the apiserver itself listens on this
// machine's loopback, so it can dial us there too. It must come after the
// container strategies: a containerised apiserver published on loopback
// cannot dial the host's loopback.
type Loopback struct{}

var _ Strategy = Loopback{}

func (Loopback) Name() string { return "loopback" }
func (Loopback) Decide(_ context.Context, in Input) (Decision, bool, error) {
	host, err := in.ServerHost()
	if err != nil {
		return Decision{}, false, err
	}
	if !IsLoopbackHost(host) {
		return Decision{Reason: fmt.Sprintf("the apiserver host %s is not loopback", host)}, false, nil
	}
	addr := "127.0.0.1"
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		addr = "::1"
	}
	return Decision{Host: addr, Reason: fmt.Sprintf("the apiserver is on this machine's loopback (%s)", host)}, true, nil
}

// IsLoopbackHost says whether host (a name or an IP) is this machine's
// loopback: "localhost" or an address of 127.0.0.0/8 or ::1.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopbackAddress says whether address, host:port, listens on loopback
// only: the pages and ports that must not reach beyond this machine unless
// asked (the inspector's).
func IsLoopbackAddress(address string) bool {
	host, _, err := net.SplitHostPort(address)
	return err == nil && IsLoopbackHost(host)
}
