// Package advertise decides which address the kube-apiserver should dial to reach
// this process. Reachability is the first thing that goes wrong when a webhook
// runs outside the cluster, so each way of deciding is a small Strategy and
// Decide reports which one won and why.
//
// Default tries the strategies in this order; the first that applies wins:
//
//  1. explicit: --advertise-address (an IP or a DNS name) always wins.
//  2. kind (Linux): the cluster is kind and its apiserver is published on
//     this machine (loopback or one of its addresses), so the apiserver runs
//     in a container on docker's "kind" network and dials the host through
//     that network's gateway: the gateway docker reports, else the address
//     of the local bridge whose subnet holds the cluster's own address.
//  3. docker-desktop (macOS, Windows): the cluster runs in a container inside
//     Docker Desktop's VM and is published on loopback; the VM reaches the
//     host only through the host.docker.internal name (the certificate then
//     carries a DNS SAN).
//  4. loopback: the apiserver listens on this machine's loopback (a local
//     control plane such as hack/cluster), so it can dial 127.0.0.1 back.
//  5. route: the source address of this machine's route to the apiserver
//     host (a UDP "connect", which sends no packet), unless that is a
//     loopback or link-local address.
//
// When none applies, Decide returns ErrNoAddress, which suggests
// --advertise-address.
//
// kind and docker-desktop come before loopback on purpose: kind publishes its
// apiserver on 127.0.0.1:PORT of the host, but the apiserver itself runs in a
// container whose 127.0.0.1 is its own. A loopback server is taken for a
// container when the kubeconfig context is kind's ("kind-<name>"; for Docker
// Desktop also "docker-desktop"), or when the docker CLI shows a running
// container (on the "kind" network, for the kind strategy) that publishes the
// server's port. A local apiserver on loopback (context "kwok-hookback" of
// hack/cluster, no container publishing its port, or no docker at all) falls
// through to loopback.
package advertise

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"runtime"
	"strings"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/internal/errkind"
)

// ErrNoAddress means no strategy found a usable address.
var ErrNoAddress = errors.New("advertise: no address the apiserver can reach")

// Decision is the address to advertise and why.
type Decision struct {
	// Host is an IP or DNS name (no port).
	Host string
	// Strategy names the strategy that chose it.
	Strategy string
	// Reason says why, for the log line.
	Reason string
	// Skipped lists the strategies tried before the winner, each as
	// "name: why it did not apply", for debugging a surprising choice.
	Skipped []string
}

// Input is what strategies look at.
type Input struct {
	// Explicit is --advertise-address; empty when unset.
	Explicit string
	// Server is the apiserver URL from the kubeconfig.
	Server string
	// Context is the kubeconfig context name.
	Context string
	// ClusterAddresses, when set, returns addresses the cluster itself uses
	// (the apiserver's advertised endpoints). Strategies call it only when
	// they need it, because it costs a request; nil means unknown.
	ClusterAddresses func(ctx context.Context) ([]net.IP, error)
}

// ServerHost returns the host part of Server.
func (in Input) ServerHost() (string, error) {
	u, err := url.Parse(in.Server)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("advertise: apiserver address %q is not a URL", in.Server)
	}
	return u.Hostname(), nil
}

// ServerPort returns the port of Server, defaulting from the scheme.
func (in Input) ServerPort() string {
	u, err := url.Parse(in.Server)
	if err != nil {
		return ""
	}
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "http" {
		return "80"
	}
	return "443"
}

// Strategy is one way of choosing the address.
//
// Contract: Decide returns ok=false and no error when the strategy does not
// apply, so the next one is tried; it may then put why into d.Reason for
// the debug trail. An error stops the search, because it means the strategy
// applies but cannot work and a later strategy would pick a wrong address
// (the user must intervene).
type Strategy interface {
	Name() string
	Decide(ctx context.Context, in Input) (d Decision, ok bool, err error)
}

// Decide tries strategies in order and returns the first decision, with the
// reasons the earlier ones were skipped.
func Decide(ctx context.Context, in Input, strategies []Strategy) (Decision, error) {
	var skipped []string
	for _, s := range strategies {
		d, ok, err := s.Decide(ctx, in)
		if err != nil {
			return Decision{Skipped: skipped}, fmt.Errorf("advertise: strategy %s: %w", s.Name(), err)
		}
		if ok {
			d.Strategy = s.Name()
			d.Skipped = skipped
			return d, nil
		}
		why := d.Reason
		if why == "" {
			why = "does not apply"
		}
		skipped = append(skipped, s.Name()+": "+why)
	}
	return Decision{Skipped: skipped}, errkind.New(ErrNoAddress, field.Advise("advertise.Input.Explicit", "no address the apiserver can reach was found: pass {advertise.Input.Explicit} with an IP or DNS name of this machine that the apiserver can route to (tried %s)", strings.Join(skipped, "; ")))
}

// Default is the strategy order used by hookback start, check and render,
// backed by this machine's docker CLI, interfaces and routes.
func Default() []Strategy {
	docker := DockerCLI{}
	ifaces := SystemInterfaces{}
	return []Strategy{
		Explicit{},
		Kind{GOOS: runtime.GOOS, Docker: docker, Interfaces: ifaces},
		DockerDesktop{GOOS: runtime.GOOS, Docker: docker},
		Loopback{},
		Route{Dialer: UDPDialer{}},
	}
}

// Explicit wins whenever Input.Explicit is set (--advertise-address).
type Explicit struct{}

var _ Strategy = Explicit{}

func (Explicit) Name() string { return "explicit" }
func (Explicit) Decide(_ context.Context, in Input) (Decision, bool, error) {
	if in.Explicit == "" {
		return Decision{Reason: "no explicit address was given"}, false, nil
	}
	return Decision{Host: in.Explicit, Reason: "the address was given explicitly"}, true, nil
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
	ifaces, err := SystemInterfaces{}.List()
	if err != nil {
		return false
	}
	return hasAddress(ifaces, ip)
}
