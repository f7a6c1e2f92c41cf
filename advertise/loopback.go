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
	if !isLoopbackHost(host) {
		return Decision{Reason: fmt.Sprintf("the apiserver host %s is not loopback", host)}, false, nil
	}
	addr := "127.0.0.1"
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		addr = "::1"
	}
	return Decision{Host: addr, Reason: fmt.Sprintf("the apiserver is on this machine's loopback (%s)", host)}, true, nil
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
