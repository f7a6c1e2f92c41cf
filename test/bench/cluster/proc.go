package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one running `hookback start`.
type proc struct {
	session string
	health  string
	cmd     *exec.Cmd
	logPath string
	started time.Time

	mu     sync.Mutex
	stdout strings.Builder
	done   chan struct{}
	err    error
}

// procs remembers every hookback started, so they are all stopped (and
// deregister) however the run ends.
type procs struct {
	mu  sync.Mutex
	all []*proc
}

func (ps *procs) add(p *proc) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.all = append(ps.all, p)
}

func (ps *procs) stopAll() {
	ps.mu.Lock()
	all := ps.all
	ps.all = nil
	ps.mu.Unlock()
	for _, p := range all {
		_, _ = p.stop(30 * time.Second)
	}
}

// session returns a fresh session name for section.
func session(section string) string {
	return fmt.Sprintf("bench-%s-%s", section, strconv.FormatUint(rand.Uint64()%(36*36*36*36*36), 36))
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startHookback runs `hookback start` with its own session, ports and log
// file; extraEnv is appended to the environment.
func (e *env) startHookback(sess, stateDir string, extraEnv []string, args ...string) (*proc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	hport, err := freePort()
	if err != nil {
		return nil, err
	}
	health := "127.0.0.1:" + strconv.Itoa(hport)
	full := append([]string{"start", "--session", sess, "--port", strconv.Itoa(port),
		"--health-address", health, "--state-dir", stateDir}, args...)
	return e.startProc(sess, health, e.cfg.binary, full, extraEnv)
}

// startProc runs binary with args, its stderr to logs/sess.log and its
// stdout kept; health is where it serves /metrics (and /readyz).
func (e *env) startProc(sess, health, binary string, args, extraEnv []string) (*proc, error) {
	p := &proc{
		session: sess,
		health:  health,
		logPath: filepath.Join(e.cfg.workdir, "logs", sess+".log"),
		done:    make(chan struct{}),
	}
	logf, err := os.Create(p.logPath)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env = append(append(os.Environ(), "KUBECONFIG="+e.cfg.kubeconfig), extraEnv...)
	p.cmd.Stderr = logf
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	e.procs.add(p)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.stdout.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
		p.err = p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stdout.String()
}

func (p *proc) failure(what string) error {
	logs, _ := os.ReadFile(p.logPath)
	if len(logs) > 4000 {
		logs = logs[len(logs)-4000:]
	}
	return fmt.Errorf("hookback %s %s: %v\nstdout:\n%s\nstderr (tail of %s):\n%s", p.session, what, p.err, p.output(), p.logPath, logs)
}

var readyClient = &http.Client{Timeout: time.Second}

// waitReady polls /readyz every 2ms and returns when it first answers 200,
// measured from the process start.
func (p *proc) waitReady(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for {
		if p.exited() {
			return 0, p.failure("exited before it was ready")
		}
		resp, err := readyClient.Get("http://" + p.health + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(p.started), nil
			}
		}
		if time.Now().After(deadline) {
			return 0, p.failure(fmt.Sprintf("not ready within %s", timeout))
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

var bannerRE = regexp.MustCompile(`hookback is ready in (\S+), verified: the apiserver called back in (\S+)`)

// banner returns the ready and verified durations hookback printed.
func (p *proc) banner(timeout time.Duration) (ready, verified time.Duration, err error) {
	deadline := time.Now().Add(timeout)
	for {
		if m := bannerRE.FindStringSubmatch(p.output()); m != nil {
			if ready, err = time.ParseDuration(m[1]); err != nil {
				return 0, 0, err
			}
			verified, err = time.ParseDuration(m[2])
			return ready, verified, err
		}
		if time.Now().After(deadline) || p.exited() {
			return 0, 0, p.failure("printed no verified banner")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for the exit; it returns how long that took.
func (p *proc) stop(timeout time.Duration) (time.Duration, error) {
	if p.exited() {
		return 0, nil
	}
	t := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !p.exited() {
		return 0, err
	}
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return 0, fmt.Errorf("hookback %s did not exit within %s of SIGTERM; killed", p.session, timeout)
	}
	took := time.Since(t)
	var ee *exec.ExitError
	if p.err != nil && !errors.As(p.err, &ee) {
		return took, p.err
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		return took, p.failure(fmt.Sprintf("exited %d after SIGTERM", code))
	}
	return took, nil
}

// metrics scrapes /metrics into name{labels} -> value.
func (p *proc) metrics() (map[string]float64, error) {
	resp, err := readyClient.Get("http://" + p.health + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return parseMetrics(resp.Body)
}

// parseMetrics reads Prometheus' text format into series -> value, the
// series written as exposed (name{labels}).
func parseMetrics(r io.Reader) (map[string]float64, error) {
	m := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

func commandOutput(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).Output()
	return string(out), err
}
