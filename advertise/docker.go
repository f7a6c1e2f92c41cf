package advertise

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// KindNetwork is the docker network kind puts its node containers on.
const KindNetwork = "kind"

// ErrNoDocker means the docker CLI is not installed; the strategies then
// decide from what they can see without it.
var ErrNoDocker = errors.New("docker CLI not found")

// Network is what the strategies need to know about a docker network.
type Network struct {
	Subnets  []*net.IPNet
	Gateways []net.IP
}

// Docker answers the questions the container strategies ask. Tests inject a
// fake, so no test runs docker.
type Docker interface {
	// Network describes the named network.
	Network(ctx context.Context, name string) (Network, error)
	// Publisher returns the name of a running container that publishes
	// hostPort on the host, only among containers on network when network
	// is not empty; ok is false when there is none.
	Publisher(ctx context.Context, network string, hostPort int) (name string, ok bool, err error)
}

// DockerCLI asks the docker command line client, so it honours the user's
// DOCKER_HOST and docker contexts exactly as `kind` does.
type DockerCLI struct {
	// Timeout bounds each call (default 5s): a hung daemon must not hang
	// hookback start.
	Timeout time.Duration
}

var _ Docker = DockerCLI{}

func (d DockerCLI) run(ctx context.Context, args ...string) ([]byte, error) {
	path, err := exec.LookPath("docker")
	if err != nil {
		return nil, ErrNoDocker
	}
	timeout := d.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return nil, fmt.Errorf("docker %s: %w: %s", args[0], err, msg)
	}
	return stdout.Bytes(), nil
}

func (d DockerCLI) Network(ctx context.Context, name string) (Network, error) {
	out, err := d.run(ctx, "network", "inspect", name, "--format", "{{json .IPAM.Config}}")
	if err != nil {
		return Network{}, err
	}
	return parseIPAM(out)
}

func (d DockerCLI) Publisher(ctx context.Context, network string, hostPort int) (string, bool, error) {
	args := []string{"ps", "--format", "{{.Names}}\t{{.Ports}}"}
	if network != "" {
		args = append(args, "--filter", "network="+network)
	}
	out, err := d.run(ctx, args...)
	if err != nil {
		return "", false, err
	}
	name, ok := findPublisher(string(out), hostPort)
	return name, ok, nil
}

// parseIPAM reads `docker network inspect --format '{{json .IPAM.Config}}'`.
func parseIPAM(out []byte) (Network, error) {
	var cfgs []struct{ Subnet, Gateway string }
	if err := json.Unmarshal(bytes.TrimSpace(out), &cfgs); err != nil {
		return Network{}, fmt.Errorf("read docker network IPAM config: %w", err)
	}
	var n Network
	for _, c := range cfgs {
		if _, subnet, err := net.ParseCIDR(c.Subnet); err == nil {
			n.Subnets = append(n.Subnets, subnet)
		}
		if gw := net.ParseIP(c.Gateway); gw != nil {
			n.Gateways = append(n.Gateways, gw)
		}
	}
	return n, nil
}

// findPublisher reads `docker ps --format '{{.Names}}\t{{.Ports}}'` lines,
// whose ports look like "127.0.0.1:41235->6443/tcp, :::8080->80/tcp", and
// returns the container publishing hostPort on a loopback or wildcard host
// address (the only ones a loopback kubeconfig server can be).
func findPublisher(out string, hostPort int) (string, bool) {
	for line := range strings.SplitSeq(out, "\n") {
		name, ports, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok {
			continue
		}
		for p := range strings.SplitSeq(ports, ",") {
			host, _, ok := strings.Cut(strings.TrimSpace(p), "->")
			if !ok {
				continue // exposed, not published
			}
			i := strings.LastIndexByte(host, ':')
			if i < 0 {
				continue
			}
			ip := net.ParseIP(strings.Trim(host[:i], "[]"))
			if host[:i] != "" && (ip == nil || !(ip.IsLoopback() || ip.IsUnspecified())) {
				continue
			}
			if portInRange(host[i+1:], hostPort) {
				return name, true
			}
		}
	}
	return "", false
}

// portInRange matches "6443" or a published range "8000-8010".
func portInRange(spec string, port int) bool {
	lo, hi, isRange := strings.Cut(spec, "-")
	if !isRange {
		hi = lo
	}
	l, err1 := strconv.Atoi(lo)
	h, err2 := strconv.Atoi(hi)
	return err1 == nil && err2 == nil && l <= port && port <= h
}
