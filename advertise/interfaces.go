package advertise

import (
	"fmt"
	"net"
)

// Interface is one network interface of this machine and its addresses.
type Interface struct {
	Name string
	// Loopback marks the loopback interface, never a bridge to a cluster.
	Loopback bool
	Addrs    []*net.IPNet
}

// Interfaces lists this machine's interfaces; tests inject a fixed list.
type Interfaces interface {
	List() ([]Interface, error)
}

// SystemInterfaces reads the interfaces of the running machine.
type SystemInterfaces struct{}

var _ Interfaces = SystemInterfaces{}

func (SystemInterfaces) List() ([]Interface, error) {
	sys, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list network interfaces: %w", err)
	}
	out := make([]Interface, 0, len(sys))
	for _, s := range sys {
		addrs, err := s.Addrs()
		if err != nil {
			return nil, fmt.Errorf("list addresses of %s: %w", s.Name, err)
		}
		iface := Interface{Name: s.Name, Loopback: s.Flags&net.FlagLoopback != 0}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				iface.Addrs = append(iface.Addrs, n)
			}
		}
		out = append(out, iface)
	}
	return out, nil
}

// hasAddress reports whether ip is assigned to one of ifaces.
func hasAddress(ifaces []Interface, ip net.IP) bool {
	for _, iface := range ifaces {
		for _, n := range iface.Addrs {
			if n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}

// addressInSubnet finds this machine's address inside subnet: on a docker
// bridge that is the gateway the containers route to.
func addressInSubnet(ifaces []Interface, subnet *net.IPNet) (net.IP, string, bool) {
	for _, iface := range ifaces {
		if iface.Loopback {
			continue
		}
		for _, n := range iface.Addrs {
			if subnet.Contains(n.IP) {
				return n.IP, iface.Name, true
			}
		}
	}
	return nil, "", false
}

// addressNextTo finds this machine's address on the interface whose subnet
// holds peer (a container on a local bridge): the address peer dials to
// reach us.
func addressNextTo(ifaces []Interface, peer net.IP) (net.IP, string, bool) {
	for _, iface := range ifaces {
		if iface.Loopback {
			continue
		}
		for _, n := range iface.Addrs {
			if n.Contains(peer) && !n.IP.Equal(peer) {
				return n.IP, iface.Name, true
			}
		}
	}
	return nil, "", false
}
