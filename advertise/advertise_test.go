package advertise

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
)

// machine is everything a decision depends on, injected.
type machine struct {
	goos    string
	docker  Docker
	ifaces  Interfaces
	dialer  Dialer
	cluster []net.IP
}

// strategies is Default with the machine injected.
func (m machine) strategies() []Strategy {
	return []Strategy{
		Explicit{},
		Kind{GOOS: m.goos, Docker: m.docker, Interfaces: m.ifaces},
		DockerDesktop{GOOS: m.goos, Docker: m.docker},
		Loopback{},
		Route{Dialer: m.dialer},
	}
}

func TestDefaultOrder(t *testing.T) {
	var names []string
	for _, s := range Default() {
		names = append(names, s.Name())
	}
	want := []string{"explicit", "kind", "docker-desktop", "loopback", "route"}
	if !slices.Equal(names, want) {
		t.Fatalf("Default() order = %v, want %v (the package comment documents it)", names, want)
	}
	var test []string
	for _, s := range (machine{}).strategies() {
		test = append(test, s.Name())
	}
	if !slices.Equal(test, want) {
		t.Fatalf("test strategies %v drifted from Default()", test)
	}
}

var (
	noDocker     = fakeDocker{netErr: ErrNoDocker, psErr: ErrNoDocker}
	deadDaemon   = errors.New("docker ps: exit status 1: Cannot connect to the Docker daemon")
	kindDocker   = fakeDocker{network: kindNetwork, published: map[string]map[int]string{"kind": {41235: "dev-control-plane"}}}
	routeToLAN   = fakeDialer{ip: "192.168.1.20"}
	unreachable  = fakeDialer{err: errors.New("connect: network is unreachable")}
	kindCluster  = ips("172.18.0.3")
	kindLoopback = "https://127.0.0.1:41235"
)

type decideCase struct {
	name     string
	m        machine
	in       Input
	host     string
	strategy string
	// errHas, when set, is a substring the error must contain.
	errHas string
}

var decideCases = []decideCase{
	{name: "explicit wins over kind", m: machine{goos: "linux", docker: kindDocker, ifaces: laptop, dialer: routeToLAN},
		in: Input{Explicit: "dev.example.test", Server: kindLoopback, Context: "kind-dev"}, host: "dev.example.test", strategy: "explicit"},

	// kind on Linux: the apiserver is published on loopback but runs in a container.
	{name: "kind context on linux: kind network gateway", m: machine{goos: "linux", docker: kindDocker, ifaces: laptop, dialer: routeToLAN},
		in: Input{Server: kindLoopback, Context: "kind-dev"}, host: "172.18.0.1", strategy: "kind"},
	{name: "renamed kind context told apart by the published port", m: machine{goos: "linux", docker: kindDocker, ifaces: laptop, dialer: routeToLAN},
		in: Input{Server: kindLoopback, Context: "admin@dev"}, host: "172.18.0.1", strategy: "kind"},
	{name: "kind without docker: bridge next to the cluster address", m: machine{goos: "linux", docker: noDocker, ifaces: laptop, dialer: routeToLAN, cluster: kindCluster},
		in: Input{Server: kindLoopback, Context: "kind-dev"}, host: "172.18.0.1", strategy: "kind"},
	{name: "kind with nil docker: bridge next to the cluster address", m: machine{goos: "linux", ifaces: laptop, dialer: routeToLAN, cluster: kindCluster},
		in: Input{Server: kindLoopback, Context: "kind-dev"}, host: "172.18.0.1", strategy: "kind"},
	{name: "kind network without gateway field: bridge in its subnet",
		m:  machine{goos: "linux", docker: fakeDocker{network: Network{Subnets: kindNetwork.Subnets}}, ifaces: laptop, dialer: routeToLAN},
		in: Input{Server: kindLoopback, Context: "kind-dev"}, host: "172.18.0.1", strategy: "kind"},
	{name: "kind gateway not on this machine is an error",
		m:  machine{goos: "linux", docker: fakeDocker{network: Network{Gateways: ips("172.30.0.1")}}, ifaces: laptop, dialer: routeToLAN},
		in: Input{Server: kindLoopback, Context: "kind-dev"}, errHas: "not an address of this machine"},
	{name: "kind with no way to find the gateway is an error, not loopback", m: machine{goos: "linux", docker: noDocker, ifaces: laptop, dialer: routeToLAN},
		in: Input{Server: kindLoopback, Context: "kind-dev"}, errHas: "pass advertise.Input.Explicit with the gateway"},
	{name: "kind cluster address on no local bridge is an error", m: machine{goos: "linux", docker: noDocker, ifaces: laptop, dialer: routeToLAN, cluster: ips("10.89.0.2")},
		in: Input{Server: kindLoopback, Context: "kind-dev"}, errHas: "no local interface shares a subnet"},

	{name: "kind on another machine: route", m: machine{goos: "linux", docker: noDocker, ifaces: laptop, dialer: routeToLAN, cluster: ips("172.18.0.2")},
		in: Input{Server: "https://192.168.1.5:6443", Context: "kind-remote"}, host: "192.168.1.20", strategy: "route"},
	{name: "kind on this machine with apiServerAddress on the LAN: still the gateway", m: machine{goos: "linux", docker: kindDocker, ifaces: laptop, dialer: routeToLAN},
		in: Input{Server: "https://192.168.1.20:6443", Context: "kind-dev"}, host: "172.18.0.1", strategy: "kind"},

	// A local apiserver on loopback (hack/cluster): not a container.
	{name: "local control plane on loopback", m: machine{goos: "linux", docker: kindDocker, ifaces: laptop, dialer: routeToLAN},
		in: Input{Server: "https://127.0.0.1:32766", Context: "kwok-hookback"}, host: "127.0.0.1", strategy: "loopback"},
	{name: "local control plane, no docker", m: machine{goos: "linux", docker: noDocker, ifaces: laptop, dialer: routeToLAN},
		in: Input{Server: "https://127.0.0.1:32766", Context: "kwok-hookback"}, host: "127.0.0.1", strategy: "loopback"},
	{name: "local control plane, docker daemon down", m: machine{goos: "linux", docker: fakeDocker{netErr: deadDaemon, psErr: deadDaemon}, ifaces: laptop, dialer: routeToLAN},
		in: Input{Server: "https://127.0.0.1:32766", Context: "kwok-hookback"}, host: "127.0.0.1", strategy: "loopback"},
	{name: "port published by a container off the kind network is not kind",
		m:  machine{goos: "linux", docker: fakeDocker{published: map[string]map[int]string{"bridge": {32766: "minikube"}}}, ifaces: laptop, dialer: routeToLAN},
		in: Input{Server: "https://127.0.0.1:32766", Context: "minikube"}, host: "127.0.0.1", strategy: "loopback"},
	{name: "localhost server", m: machine{goos: "linux", docker: noDocker, dialer: routeToLAN},
		in: Input{Server: "https://localhost:6443", Context: "local"}, host: "127.0.0.1", strategy: "loopback"},
	{name: "IPv6 loopback server", m: machine{goos: "linux", docker: noDocker, dialer: routeToLAN},
		in: Input{Server: "https://[::1]:6443", Context: "local"}, host: "::1", strategy: "loopback"},

	// Docker Desktop: the containers live in a VM.
	{name: "kind on macOS: host.docker.internal", m: machine{goos: "darwin", docker: kindDocker, ifaces: laptop, dialer: routeToLAN},
		in: Input{Server: kindLoopback, Context: "kind-dev"}, host: HostDockerInternal, strategy: "docker-desktop"},
	{name: "Docker Desktop Kubernetes on Windows", m: machine{goos: "windows", docker: noDocker, dialer: routeToLAN},
		in: Input{Server: "https://kubernetes.docker.internal:6443", Context: "docker-desktop"}, host: HostDockerInternal, strategy: "docker-desktop"},
	{name: "container on any network publishing the port on macOS",
		m:  machine{goos: "darwin", docker: fakeDocker{published: map[string]map[int]string{"minikube": {50123: "minikube"}}}, dialer: routeToLAN},
		in: Input{Server: "https://127.0.0.1:50123", Context: "minikube"}, host: HostDockerInternal, strategy: "docker-desktop"},
	{name: "native apiserver on macOS loopback", m: machine{goos: "darwin", docker: fakeDocker{}, dialer: routeToLAN},
		in: Input{Server: "https://127.0.0.1:6443", Context: "local"}, host: "127.0.0.1", strategy: "loopback"},

	{name: "kind on another machine from macOS: route", m: machine{goos: "darwin", docker: kindDocker, dialer: routeToLAN},
		in: Input{Server: "https://192.168.1.5:6443", Context: "kind-remote"}, host: "192.168.1.20", strategy: "route"},

	// Anything else: the route.
	{name: "remote apiserver: source address of the route", m: machine{goos: "linux", docker: kindDocker, ifaces: laptop, dialer: routeToLAN},
		in: Input{Server: "https://192.168.1.5:6443", Context: "dev"}, host: "192.168.1.20", strategy: "route"},
	{name: "remote apiserver on macOS: route, not Docker Desktop", m: machine{goos: "darwin", docker: kindDocker, dialer: routeToLAN},
		in: Input{Server: "https://api.dev.example.test:6443", Context: "dev"}, host: "192.168.1.20", strategy: "route"},
	{name: "route through loopback is unusable", m: machine{goos: "linux", docker: noDocker, dialer: fakeDialer{ip: "127.0.0.1"}},
		in: Input{Server: "https://api.dev.example.test:6443", Context: "dev"}, errHas: "pass advertise.Input.Explicit with an IP"},
	{name: "route from a link-local address is unusable", m: machine{goos: "linux", docker: noDocker, dialer: fakeDialer{ip: "fe80::1"}},
		in: Input{Server: "https://[fe80::2]:6443", Context: "dev"}, errHas: "pass advertise.Input.Explicit with an IP"},
	{name: "no route", m: machine{goos: "linux", docker: noDocker, dialer: unreachable},
		in: Input{Server: "https://192.168.1.5:6443", Context: "dev"}, errHas: "network is unreachable"},
	{name: "server is not a URL", m: machine{goos: "linux", docker: noDocker, dialer: routeToLAN},
		in: Input{Server: "::::", Context: "dev"}, errHas: "is not a URL"},
}

func TestDecide(t *testing.T) {
	for _, tc := range decideCases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if tc.m.cluster != nil {
				in.ClusterAddresses = func(context.Context) ([]net.IP, error) { return tc.m.cluster, nil }
			}
			d, err := Decide(context.Background(), in, tc.m.strategies())
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("Decide = %+v, %v; want an error containing %q", d, err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if d.Host != tc.host || d.Strategy != tc.strategy {
				t.Errorf("Decide = %s by %s, want %s by %s (why: %s; skipped: %q)", d.Host, d.Strategy, tc.host, tc.strategy, d.Reason, d.Skipped)
			}
			if d.Reason == "" {
				t.Error("no reason given")
			}
		})
	}
}

func TestDecideExplainsSkippedStrategies(t *testing.T) {
	m := machine{goos: "linux", docker: noDocker, dialer: routeToLAN}
	d, err := Decide(context.Background(), Input{Server: "https://192.168.1.5:6443", Context: "dev"}, m.strategies())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Skipped) != 4 {
		t.Fatalf("skipped = %q, want explicit, kind, docker-desktop and loopback", d.Skipped)
	}
	for _, want := range []string{"no explicit address was given", `context "dev" is not named kind-*`, "only on macOS and Windows", "is not loopback"} {
		if !strings.Contains(strings.Join(d.Skipped, "\n"), want) {
			t.Errorf("skipped reasons lack %q: %q", want, d.Skipped)
		}
	}
}

func TestNoAddressWrapsSentinel(t *testing.T) {
	m := machine{goos: "linux", docker: noDocker, dialer: unreachable}
	_, err := Decide(context.Background(), Input{Server: "https://192.168.1.5:6443"}, m.strategies())
	if !errors.Is(err, ErrNoAddress) {
		t.Fatalf("err = %v, want ErrNoAddress", err)
	}
}

func TestKindAsksClusterOnlyWhenDockerCannotTell(t *testing.T) {
	m := machine{goos: "linux", docker: kindDocker, ifaces: laptop}
	in := Input{Server: kindLoopback, Context: "kind-dev", ClusterAddresses: func(context.Context) ([]net.IP, error) {
		t.Error("asked the cluster although docker knew the gateway")
		return nil, nil
	}}
	if _, err := Decide(context.Background(), in, m.strategies()); err != nil {
		t.Fatal(err)
	}
}

func TestServerPort(t *testing.T) {
	for server, want := range map[string]string{
		"https://127.0.0.1:41235": "41235",
		"https://example.test":    "443",
		"http://example.test":     "80",
		"https://[::1]:6443":      "6443",
	} {
		if got := (Input{Server: server}).ServerPort(); got != want {
			t.Errorf("ServerPort(%s) = %q, want %q", server, got, want)
		}
	}
}
