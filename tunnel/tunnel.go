// Package tunnel decides which address the kube-apiserver should dial to reach
// this process. Each way of deciding is a Strategy; Decide tries them in order
// and reports which one won and why, because reachability is the first thing
// that goes wrong when a webhook runs on a laptop.
package tunnel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// ErrNoAddress means no strategy found a usable address.
var ErrNoAddress = errors.New("tunnel: no address the apiserver can reach was found: pass --advertise-address with an IP or DNS name of this machine that the apiserver can route to")

// Decision is the address to advertise and why.
type Decision struct {
	// Host is an IP or DNS name (no port).
	Host string
	// Strategy names the strategy that chose it.
	Strategy string
	// Reason says why, for the log line.
	Reason string
}

// Input is what strategies look at.
type Input struct {
	// Explicit is --advertise-address; empty when unset.
	Explicit string
	// Server is the apiserver URL from the kubeconfig.
	Server string
	// Context is the kubeconfig context name.
	Context string
}

// ServerHost returns the host part of Server.
func (in Input) ServerHost() (string, error) {
	u, err := url.Parse(in.Server)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("tunnel: apiserver address %q is not a URL", in.Server)
	}
	return u.Hostname(), nil
}

// Strategy is one way of choosing the address.
//
// Contract: Decide returns ok=false (and no error) when the strategy does not
// apply, so the next one is tried; an error stops the search, because it means
// the strategy applies but cannot work (the user must intervene).
type Strategy interface {
	Name() string
	Decide(ctx context.Context, in Input) (d Decision, ok bool, err error)
}

// Decide tries strategies in order and returns the first decision.
func Decide(ctx context.Context, in Input, strategies []Strategy) (Decision, error) {
	var skipped []string
	for _, s := range strategies {
		d, ok, err := s.Decide(ctx, in)
		if err != nil {
			return Decision{}, fmt.Errorf("tunnel: strategy %s: %w", s.Name(), err)
		}
		if ok {
			d.Strategy = s.Name()
			return d, nil
		}
		skipped = append(skipped, s.Name())
	}
	return Decision{}, fmt.Errorf("%w (tried %s)", ErrNoAddress, strings.Join(skipped, ", "))
}

// Explicit wins whenever --advertise-address is set.
type Explicit struct{}

var _ Strategy = Explicit{}

func (Explicit) Name() string { return "explicit" }
func (Explicit) Decide(_ context.Context, in Input) (Decision, bool, error) {
	if in.Explicit == "" {
		return Decision{}, false, nil
	}
	return Decision{Host: in.Explicit, Reason: "--advertise-address was given"}, true, nil
}

// Loopback picks 127.0.0.1 when the apiserver itself listens on this
// machine's loopback, so it can dial us there too.
type Loopback struct{}

var _ Strategy = Loopback{}

func (Loopback) Name() string { return "loopback" }
func (Loopback) Decide(_ context.Context, in Input) (Decision, bool, error) {
	host, err := in.ServerHost()
	if err != nil {
		return Decision{}, false, err
	}
	if !isLoopbackHost(host) {
		return Decision{}, false, nil
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

// Dialer finds the local address the kernel would use to reach addr.
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
		return nil, err
	}
	defer conn.Close()
	return conn.LocalAddr().(*net.UDPAddr).IP, nil
}

// Route picks this machine's source address on the route to the apiserver.
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
		return Decision{}, false, nil
	}
	if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() {
		return Decision{}, false, nil
	}
	return Decision{Host: ip.String(), Reason: fmt.Sprintf("source address of this machine's route to the apiserver host %s", host)}, true, nil
}

// Default is the strategy order used by hookback start and check.
func Default() []Strategy {
	return []Strategy{Explicit{}, Loopback{}, Route{Dialer: UDPDialer{}}}
}

// IsLocal reports whether host is an address of one of this machine's
// interfaces, which decides whether we can bind to it.
func IsLocal(host string) bool {
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}
