package advertise

import (
	"context"
	"fmt"
	"net"
)

// Dialer finds the local address the kernel would use to reach a host.
type Dialer interface {
	LocalAddrFor(ctx context.Context, host string) (net.IP, error)
}

// UDPDialer "connects" a UDP socket, which picks a route and a source
// address without sending any packet.
type UDPDialer struct{}

var _ Dialer = UDPDialer{}

func (UDPDialer) LocalAddrFor(ctx context.Context, host string) (net.IP, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", net.JoinHostPort(host, "443"))
	if err != nil {
		return nil, fmt.Errorf("find the route to %s: %w", host, err)
	}
	defer conn.Close()
	addr, ok := conn.LocalAddr().(*net.UDPAddr)
	if !ok {
		return nil, fmt.Errorf("find the route to %s: unexpected local address %v", host, conn.LocalAddr())
	}
	return addr.IP, nil
}

// Route picks this machine's source address on the route to the apiserver:
// the address the apiserver sees our requests come from is, on a flat
// network, the one it can dial back.
type Route struct{ Dialer Dialer }

var _ Strategy = Route{}

func (Route) Name() string { return "route" }
func (r Route) Decide(ctx context.Context, in Input) (Decision, bool, error) {
	host, err := in.ServerHost()
	if err != nil {
		return Decision{}, false, err
	}
	ip, err := r.Dialer.LocalAddrFor(ctx, host)
	if err != nil {
		return Decision{Reason: err.Error()}, false, nil
	}
	// A loopback or link-local source cannot be dialed from another machine;
	// unspecified means the kernel found no route.
	if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() {
		return Decision{Reason: fmt.Sprintf("the route to %s leaves from %s, which the apiserver cannot dial", host, ip)}, false, nil
	}
	return Decision{Host: ip.String(), Reason: fmt.Sprintf("source address of this machine's route to the apiserver host %s", host)}, true, nil
}
