package advertise

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseIPAM(t *testing.T) {
	// As `docker network inspect kind --format '{{json .IPAM.Config}}'` prints it.
	out := `[{"Subnet":"fc00:f853:ccd:e793::/64","Gateway":"fc00:f853:ccd:e793::1"},{"Subnet":"172.18.0.0/16","Gateway":"172.18.0.1"}]` + "\n"
	n, err := parseIPAM([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Subnets) != 2 || len(n.Gateways) != 2 || preferIPv4(n.Gateways).String() != "172.18.0.1" {
		t.Errorf("parsed %+v", n)
	}
	// Newer docker may omit the gateway of an automatic subnet.
	n, err = parseIPAM([]byte(`[{"Subnet":"172.18.0.0/16"}]`))
	if err != nil || len(n.Subnets) != 1 || len(n.Gateways) != 0 {
		t.Errorf("no gateway: %+v, %v", n, err)
	}
	if _, err := parseIPAM([]byte("Error: no such network")); err == nil {
		t.Error("garbage parsed")
	}
}

func TestFindPublisher(t *testing.T) {
	// As `docker ps --format '{{.Names}}\t{{.Ports}}'` prints it.
	out := strings.Join([]string{
		"web\t0.0.0.0:8080->80/tcp, :::8080->80/tcp",
		"dev-control-plane\t127.0.0.1:41235->6443/tcp",
		"dev-worker\t",
		"lan\t192.168.1.20:6444->6443/tcp",
		"range\t0.0.0.0:9000-9010->9000-9010/tcp",
		"v6\t[::1]:7443->6443/tcp",
		"exposed\t6443/tcp",
	}, "\n")
	for port, want := range map[int]string{41235: "dev-control-plane", 8080: "web", 9005: "range", 7443: "v6", 6444: "", 6443: "", 1: ""} {
		name, ok := findPublisher(out, port)
		if name != want || ok != (want != "") {
			t.Errorf("port %d: %q %v, want %q", port, name, ok, want)
		}
	}
}

// fakeDockerCLI puts a script named docker first on PATH; it prints stdout
// and exits with code, so DockerCLI is tested without docker.
func fakeDockerCLI(t *testing.T, stdout string, code int) {
	dir := t.TempDir()
	script := "#!/bin/sh\ncat <<'EOF'\n" + stdout + "\nEOF\necho 'fake docker stderr' >&2\nexit " + strconv.Itoa(code) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// Prepended: the script needs sh and cat, and shadows any real docker.
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestDockerCLI(t *testing.T) {
	ctx := context.Background()
	t.Run("missing", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		if _, err := (DockerCLI{}).Network(ctx, KindNetwork); !errors.Is(err, ErrNoDocker) {
			t.Errorf("err = %v, want ErrNoDocker", err)
		}
	})
	t.Run("network", func(t *testing.T) {
		fakeDockerCLI(t, `[{"Subnet":"172.18.0.0/16","Gateway":"172.18.0.1"}]`, 0)
		n, err := (DockerCLI{}).Network(ctx, KindNetwork)
		if err != nil || preferIPv4(n.Gateways).String() != "172.18.0.1" {
			t.Errorf("Network = %+v, %v", n, err)
		}
	})
	t.Run("publisher", func(t *testing.T) {
		fakeDockerCLI(t, "dev-control-plane\t127.0.0.1:41235->6443/tcp", 0)
		name, ok, err := (DockerCLI{}).Publisher(ctx, KindNetwork, 41235)
		if err != nil || !ok || name != "dev-control-plane" {
			t.Errorf("Publisher = %q %v %v", name, ok, err)
		}
	})
	t.Run("daemon down", func(t *testing.T) {
		fakeDockerCLI(t, "", 1)
		_, _, err := (DockerCLI{}).Publisher(ctx, KindNetwork, 41235)
		if err == nil || !strings.Contains(err.Error(), "fake docker stderr") {
			t.Errorf("err = %v, want docker's stderr in it", err)
		}
	})
}
