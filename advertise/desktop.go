package advertise

import (
	"context"
	"fmt"
	"strings"
)

// HostDockerInternal is the name Docker Desktop resolves, inside its VM and
// containers, to the host machine.
const HostDockerInternal = "host.docker.internal"

// DockerDesktop picks host.docker.internal on macOS and Windows when the
// cluster runs in a container (kind, Docker Desktop's own Kubernetes):
// there the containers live in a VM, so neither the host's loopback nor a
// docker bridge address reaches the host, only that name. The certificate
// then carries it as a DNS SAN, which the apiserver verifies through SNI.
type DockerDesktop struct {
	// GOOS is runtime.GOOS.
	GOOS string
	// Docker confirms a container publishes the apiserver port when the
	// context name does not tell; nil means no docker.
	Docker Docker
}

var _ Strategy = DockerDesktop{}

func (DockerDesktop) Name() string { return "docker-desktop" }

func (d DockerDesktop) Decide(ctx context.Context, in Input) (Decision, bool, error) {
	if d.GOOS != "darwin" && d.GOOS != "windows" {
		return Decision{Reason: "Docker Desktop's VM is used only on macOS and Windows, not " + d.GOOS}, false, nil
	}
	// Any container network: host.docker.internal resolves on all of them.
	evidence, whyNot, err := containerEvidence(ctx, in, d.Docker, "", "kind-", "docker-desktop")
	if err != nil {
		return Decision{}, false, err
	}
	if evidence == "" {
		return Decision{Reason: whyNot}, false, nil
	}
	// Docker Desktop publishes container ports on the host's loopback (its
	// own Kubernetes used to say kubernetes.docker.internal); any other
	// server is a cluster elsewhere, which the route reaches.
	if host, _ := in.ServerHost(); !IsLoopbackHost(host) && !strings.HasSuffix(host, ".docker.internal") {
		return Decision{Reason: fmt.Sprintf("%s, but the apiserver %s is not published by Docker Desktop on this machine", evidence, host)}, false, nil
	}
	return Decision{
		Host:   HostDockerInternal,
		Reason: fmt.Sprintf("the cluster runs in Docker Desktop's VM (%s), which reaches this machine as %s", evidence, HostDockerInternal),
	}, true, nil
}
