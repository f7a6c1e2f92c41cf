package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// floorEnv, when set, makes this program the floor webhook in a process of
// its own: hookback is one, and a floor inside the bench's process shares
// the bench's runtime, already awake, where a separate server must be
// woken for every call. Its value is the namespace the floor serves, with
// ",mutating" for the mutating floor.
const floorEnv = "BENCH_FLOOR"

// runFloor serves the floor until its stdin closes (the bench stops it or
// dies). Its first line on stdout is its address and its certificate.
func runFloor(spec string) error {
	namespace, mode, _ := strings.Cut(spec, ",")
	var patches map[string][]byte
	if mode == "mutating" {
		var err error
		if patches, err = builtinPatches(namespace); err != nil {
			return err
		}
	}
	srv, addr, ca, err := serveFloor(floorHandler(patches, new(floorCounter)))
	if err != nil {
		return err
	}
	fmt.Printf("%s %s\n", addr, base64.StdEncoding.EncodeToString(ca))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return srv.Close()
}

// floorProcess is a floor running as runFloor in a child process.
type floorProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	done   chan struct{}
	addr   string
	ca     []byte
	client *http.Client
}

func startFloorProcess(namespace string, mutating bool) (*floorProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	spec := namespace
	if mutating {
		spec += ",mutating"
	}
	return startServerProcess(self, floorEnv+"="+spec)
}

// startServerProcess runs this program as the server env selects (a floor,
// the conversion proxy) and reads where it serves from its first line.
func startServerProcess(self, env string) (*floorProcess, error) {
	var err error
	p := &floorProcess{cmd: exec.Command(self), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env)
	p.cmd.Stderr = os.Stderr
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the floor process: %w", err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	// A child that fails before it serves closes stdout: the read ends.
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ca64, ok := strings.Cut(strings.TrimSpace(line), " ")
	if err != nil || !ok {
		p.stop()
		return nil, fmt.Errorf("the floor process did not say where it serves (%q): %v", line, err)
	}
	if p.ca, err = base64.StdEncoding.DecodeString(ca64); err != nil {
		p.stop()
		return nil, fmt.Errorf("the floor process's certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(p.ca) {
		p.stop()
		return nil, errors.New("the floor process's certificate does not parse")
	}
	p.addr = addr
	p.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	return p, nil
}

// calls asks the floor process how many reviews it has answered, and
// their time.
func (p *floorProcess) calls() (int64, time.Duration, error) {
	resp, err := p.client.Get("https://" + p.addr + "/calls")
	if err != nil {
		return 0, 0, fmt.Errorf("ask the floor process for its calls: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64))
	if err != nil {
		return 0, 0, err
	}
	var n, nanos int64
	if _, err := fmt.Sscan(string(b), &n, &nanos); err != nil {
		return 0, 0, fmt.Errorf("the floor process's calls %q: %w", b, err)
	}
	return n, time.Duration(nanos), nil
}

// stop closes the child's stdin and waits for it, killing it after 10 s.
func (p *floorProcess) stop() {
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
