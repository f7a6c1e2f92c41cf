package advertise

import (
	"context"
	"net"
)

// fakeDocker answers like the docker CLI would, from fixed data.
type fakeDocker struct {
	network Network
	netErr  error
	// published maps a network to the host ports its containers publish.
	published map[string]map[int]string
	psErr     error
}

func (f fakeDocker) Network(_ context.Context, name string) (Network, error) {
	if f.netErr != nil {
		return Network{}, f.netErr
	}
	return f.network, nil
}

func (f fakeDocker) Publisher(_ context.Context, network string, port int) (string, bool, error) {
	if f.psErr != nil {
		return "", false, f.psErr
	}
	for n, ports := range f.published {
		if network != "" && n != network {
			continue
		}
		if name, ok := ports[port]; ok {
			return name, true, nil
		}
	}
	return "", false, nil
}

type fakeInterfaces []Interface

func (f fakeInterfaces) List() ([]Interface, error) { return f, nil }

type fakeDialer struct {
	ip  string
	err error
}

func (f fakeDialer) LocalAddrFor(context.Context, string) (net.IP, error) {
	return net.ParseIP(f.ip), f.err
}

func cidr(s string) *net.IPNet {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err) // test data
	}
	n.IP = ip
	return n
}

func subnet(s string) *net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err) // test data
	}
	return n
}

func ips(ss ...string) []net.IP {
	out := make([]net.IP, 0, len(ss))
	for _, s := range ss {
		out = append(out, net.ParseIP(s))
	}
	return out
}

// laptop has a LAN address, docker0 and kind's bridge.
var laptop = fakeInterfaces{
	{Name: "lo", Loopback: true, Addrs: []*net.IPNet{cidr("127.0.0.1/8"), cidr("::1/128")}},
	{Name: "wlan0", Addrs: []*net.IPNet{cidr("192.168.1.20/24"), cidr("fe80::1/64")}},
	{Name: "docker0", Addrs: []*net.IPNet{cidr("172.17.0.1/16")}},
	{Name: "br-4f2a", Addrs: []*net.IPNet{cidr("172.18.0.1/16"), cidr("fc00:f853:ccd:e793::1/64")}},
}

// kindNetwork is what `docker network inspect kind` reports on laptop.
var kindNetwork = Network{
	Subnets:  []*net.IPNet{subnet("fc00:f853:ccd:e793::/64"), subnet("172.18.0.0/16")},
	Gateways: ips("fc00:f853:ccd:e793::1", "172.18.0.1"),
}
