package advertise

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/hookback/hookback/field"
)

// Kind picks the gateway of docker's "kind" network when the cluster is
// kind on Linux: the apiserver runs in a node container on that network and
// reaches the host through the bridge's address, never through the host's
// loopback where kind publishes the apiserver port.
type Kind struct {
	// GOOS is runtime.GOOS; only on Linux is the kind bridge on this machine
	// (elsewhere it lives in Docker Desktop's VM).
	GOOS string
	// Docker is asked first; nil means no docker.
	Docker Docker
	// Interfaces finds the bridge when docker cannot answer.
	Interfaces Interfaces
}

var _ Strategy = Kind{}

func (Kind) Name() string { return "kind" }

func (k Kind) Decide(ctx context.Context, in Input) (Decision, bool, error) {
	if k.GOOS != "linux" {
		return Decision{Reason: "kind's network is on this machine only on Linux, not " + k.GOOS}, false, nil
	}
	evidence, whyNot, err := containerEvidence(ctx, in, k.Docker, KindNetwork, "kind-")
	if err != nil {
		return Decision{}, false, err
	}
	if evidence == "" {
		return Decision{Reason: whyNot}, false, nil
	}
	var ifaces []Interface
	ifErr := errors.New("no interface lister")
	if k.Interfaces != nil {
		ifaces, ifErr = k.Interfaces.List()
	}
	if host, _ := in.ServerHost(); ifErr == nil && !onThisMachine(host, ifaces) {
		// A kind cluster on another machine (apiServerAddress set, kubeconfig
		// copied) may share the default 172.18.0.0/16 with a local kind
		// network: only the route reaches it.
		return Decision{Reason: fmt.Sprintf("%s, but the apiserver %s is not on this machine", evidence, host)}, false, nil
	}
	ip, how, err := k.gateway(ctx, in, ifaces, ifErr)
	if err != nil {
		// Falling through would pick 127.0.0.1, which the kind apiserver
		// cannot dial: stop and ask for an explicit address.
		return Decision{}, false, field.Advise("advertise.Input.Explicit", "the cluster is kind (%s) but %w; pass {advertise.Input.Explicit} with the gateway of docker network %q", evidence, err, KindNetwork)
	}
	return Decision{Host: ip.String(), Reason: fmt.Sprintf("the cluster is kind (%s): %s", evidence, how)}, true, nil
}

// gateway finds this machine's address on the kind network: docker's answer
// when there is one, else the local bridge next to the cluster's addresses.
func (k Kind) gateway(ctx context.Context, in Input, ifaces []Interface, ifErr error) (net.IP, string, error) {
	var notes []string
	if k.Docker != nil {
		ip, how, err := k.dockerGateway(ctx, ifaces, ifErr)
		if ip != nil || err != nil {
			return ip, how, err
		}
		notes = append(notes, how)
	}
	if ifErr != nil {
		notes = append(notes, ifErr.Error())
	} else if ip, how := bridgeNextToCluster(ctx, in, ifaces); ip != nil {
		return ip, how, nil
	} else {
		notes = append(notes, how)
	}
	return nil, "", fmt.Errorf("the kind network's gateway was not found: %s", strings.Join(notes, "; "))
}

// dockerGateway asks docker for the kind network. It returns an address,
// or a note on why docker could not tell (nil IP and nil error), or an
// error when docker's answer is not usable from this machine.
func (k Kind) dockerGateway(ctx context.Context, ifaces []Interface, ifErr error) (net.IP, string, error) {
	n, err := k.Docker.Network(ctx, KindNetwork)
	if err != nil {
		return nil, err.Error(), nil
	}
	if gw := preferIPv4(n.Gateways); gw != nil {
		// A remote DOCKER_HOST or rootless docker reports a gateway that is
		// not on this machine: the apiserver could not reach us there.
		if ifErr == nil && !hasAddress(ifaces, gw) {
			return nil, "", fmt.Errorf("docker network %q's gateway %s is not an address of this machine (remote DOCKER_HOST or rootless docker?)", KindNetwork, gw)
		}
		return gw, fmt.Sprintf("gateway of docker network %q", KindNetwork), nil
	}
	// Some docker versions leave Gateway empty for an automatic subnet; the
	// bridge still holds the gateway address.
	if ifErr == nil {
		subnets := slices.Clone(n.Subnets)
		slices.SortStableFunc(subnets, func(a, b *net.IPNet) int { return ipv4First(a.IP, b.IP) })
		for _, subnet := range subnets {
			if ip, name, ok := addressInSubnet(ifaces, subnet); ok {
				return ip, fmt.Sprintf("address of bridge %s in docker network %q's subnet %s", name, KindNetwork, subnet), nil
			}
		}
	}
	return nil, fmt.Sprintf("docker network %q has no gateway on this machine", KindNetwork), nil
}

// bridgeNextToCluster finds the local interface whose subnet holds one of
// the cluster's own addresses (a kind node container's IP).
func bridgeNextToCluster(ctx context.Context, in Input, ifaces []Interface) (net.IP, string) {
	if in.ClusterAddresses == nil {
		return nil, "the cluster's own addresses are unknown"
	}
	addrs, err := in.ClusterAddresses(ctx)
	if err != nil {
		return nil, fmt.Sprintf("the cluster's own addresses are unknown: %v", err)
	}
	for _, a := range addrs {
		if ip, name, ok := addressNextTo(ifaces, a); ok {
			return ip, fmt.Sprintf("address of bridge %s, whose subnet holds the cluster address %s", name, a)
		}
	}
	return nil, fmt.Sprintf("no local interface shares a subnet with the cluster addresses %v", addrs)
}

// onThisMachine reports whether the apiserver host is loopback or one of
// this machine's addresses (kind's apiServerAddress set to a LAN address).
// A DNS name other than localhost counts as elsewhere: kind writes IPs.
func onThisMachine(host string, ifaces []Interface) bool {
	if IsLoopbackHost(host) {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && hasAddress(ifaces, ip)
}

// containerEvidence says why the apiserver looks like it runs in a
// container ("" with whyNot when it does not): the context is one the
// container tool names (one of prefixes), or the server is on loopback and
// docker shows a container (on network, unless empty) publishing its port.
// Docker failing is not an error: no evidence, and whyNot says so.
func containerEvidence(ctx context.Context, in Input, docker Docker, network string, prefixes ...string) (evidence, whyNot string, err error) {
	if slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(in.Context, p) }) {
		return fmt.Sprintf("context %q", in.Context), "", nil
	}
	host, err := in.ServerHost()
	if err != nil {
		return "", "", err
	}
	notTheirs := fmt.Sprintf("context %q is not named %s*", in.Context, strings.Join(prefixes, "* or "))
	if !IsLoopbackHost(host) {
		return "", notTheirs + " and the apiserver is not on loopback", nil
	}
	if docker == nil {
		return "", notTheirs + " and there is no docker to ask who publishes the apiserver port", nil
	}
	port, err := strconv.Atoi(in.ServerPort())
	if err != nil {
		return "", "", fmt.Errorf("apiserver address %q has no numeric port", in.Server)
	}
	name, ok, err := docker.Publisher(ctx, network, port)
	switch {
	case err != nil:
		return "", fmt.Sprintf("%s and docker could not tell who publishes port %d: %v", notTheirs, port, err), nil
	case !ok:
		return "", fmt.Sprintf("%s and no container%s publishes port %d", notTheirs, onNetwork(network), port), nil
	}
	return fmt.Sprintf("container %q%s publishes the apiserver port %d", name, onNetwork(network), port), "", nil
}

func onNetwork(network string) string {
	if network == "" {
		return ""
	}
	return fmt.Sprintf(" on docker network %q", network)
}

// ipv4First orders IPv4 before IPv6 (see preferIPv4).
func ipv4First(a, b net.IP) int {
	switch av, bv := a.To4() != nil, b.To4() != nil; {
	case av && !bv:
		return -1
	case bv && !av:
		return 1
	}
	return 0
}

// preferIPv4 returns the first IPv4 address, else the first address: every
// kind node has an IPv4 address on the kind network, even in IPv6 clusters.
func preferIPv4(ips []net.IP) net.IP {
	for _, ip := range ips {
		if ip.To4() != nil {
			return ip
		}
	}
	if len(ips) > 0 {
		return ips[0]
	}
	return nil
}
