package e2e

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/hookback/hookback/internal/syncbuf"
)

const (
	managedBy = "app.kubernetes.io/managed-by=hookback"
	// deadline bounds every wait: generous for a loaded 2-core CI machine.
	deadline = 60 * time.Second
)

// eventually polls cond until it reports true or the deadline passes.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %s waiting for %s (last error: %v)", deadline, what, last)
	}
}

// proc is a running hookback.
type proc struct {
	t       *testing.T
	cmd     *exec.Cmd
	session string
	health  string
	port    int
	stdout  syncbuf.Buffer
	stderr  syncbuf.Buffer
	done    chan struct{}
	err     error
}

// freePort asks the kernel for an unused loopback port.
func freePort(t *testing.T) int {
	t.Helper()
	for range portRange {
		p := portBase + int(nextPort.Add(1))%portRange
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // taken by another process: try the next
		}
		l.Close()
		return p
	}
	t.Fatalf("no free port in %d-%d", portBase, portBase+portRange-1)
	return 0
}

// Ports for the processes a test starts come from below the kernel's
// ephemeral range (net.ipv4.ip_local_port_range, 32768 and up by default),
// each handed out once per test binary. A port the kernel chose for a
// listener on port 0 was free only until it was closed: the kernel hands
// ephemeral ports to every other socket too (the apiserver's, etcd's,
// client connections), which took one now and then between the test's
// choice and the child's bind. Below the range only an explicit bind can
// take one, and the pid spreads two concurrent test binaries apart.
const (
	portBase  = 20000
	portRange = 12000
)

var nextPort = func() *atomic.Int32 {
	var n atomic.Int32
	n.Store(int32(os.Getpid() * 97 % portRange))
	return &n
}()

// sessionFor makes a session name unique to the test.
func sessionFor(t *testing.T) string {
	s := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(s) > 30 {
		s = s[:30]
	}
	return strings.Trim(s, "-") + "-" + strconv.FormatInt(time.Now().UnixNano()%100000, 36)
}

// hookback runs the binary with a kubeconfig and returns once it exited.
func hookback(t *testing.T, kubeconfig string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.binary, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run hookback %v: %v", args, err)
	}
	return o.String(), e.String(), 0
}

// startArgs are the flags every started hookback gets: its own session,
// ports and state, so tests never collide.
func startArgs(t *testing.T, session string, port int, health string) []string {
	return []string{"start", "--session", session, "--port", strconv.Itoa(port),
		"--health-address", health, "--state-dir", t.TempDir()}
}

// start runs `hookback start` in the background. It is stopped (SIGTERM) at
// the end of the test if still running.
func start(t *testing.T, extra ...string) *proc {
	t.Helper()
	return startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), extra...)
}

// startMark runs the mark binary with only the e2e mark webhook, registered
// by the e2e template: the tests of serving and registration alone.
func startMark(t *testing.T, extra ...string) *proc {
	t.Helper()
	return startBinary(t, env.markBinary, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), append(markArgs(), extra...)...)
}

// startEnv is start with the process environment given.
func startEnv(t *testing.T, environ []string, extra ...string) *proc {
	t.Helper()
	return startBinary(t, env.binary, environ, extra...)
}

// startBinary runs `BINARY start` with the test's session, ports and state.
func startBinary(t *testing.T, binary string, environ []string, extra ...string) *proc {
	t.Helper()
	return startIn(t, "", binary, environ, extra...)
}

// startIn is startBinary in directory dir ("": the test's).
func startIn(t *testing.T, dir, binary string, environ []string, extra ...string) *proc {
	t.Helper()
	p := &proc{t: t, session: sessionFor(t), port: freePort(t), done: make(chan struct{})}
	p.health = "127.0.0.1:" + strconv.Itoa(freePort(t))
	args := append(startArgs(t, p.session, p.port, p.health), extra...)
	p.cmd = exec.Command(binary, args...)
	p.cmd.Env, p.cmd.Dir = environ, dir
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		if !p.exited() {
			p.signal(syscall.SIGTERM)
			p.wait(t)
		}
		if t.Failed() {
			t.Logf("hookback stdout:\n%s\nhookback stderr:\n%s", p.stdout.String(), p.stderr.String())
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) signal(sig syscall.Signal) {
	if err := p.cmd.Process.Signal(sig); err != nil && !p.exited() {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
}

// wait waits for exit and returns the exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(deadline):
		_ = p.cmd.Process.Kill()
		t.Fatalf("hookback did not exit within %s", deadline)
	}
	return p.cmd.ProcessState.ExitCode()
}

// ready waits until /readyz answers 200 and the banner is printed, failing
// early if hookback exits.
func (p *proc) ready(t *testing.T) {
	t.Helper()
	eventually(t, "hookback /readyz", func(ctx context.Context) (bool, error) {
		if p.exited() {
			t.Fatalf("hookback exited before ready: %v\nstdout:\n%s\nstderr:\n%s", p.err, p.stdout.String(), p.stderr.String())
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.health+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		// hookback prints its banner before /readyz flips; it reaches
		// p.stdout through a pipe and a copying goroutine.
		return resp.StatusCode == http.StatusOK && strings.Contains(p.stdout.String(), "Stop with Ctrl-C"), nil
	})
}

// sessionObjects counts webhook configurations and Leases of session.
func sessionObjects(ctx context.Context, session string) (int, error) {
	return sessionObjectsOn(ctx, env.client, session)
}

// sessionObjectsOn is sessionObjects on the cluster of client.
func sessionObjectsOn(ctx context.Context, client kubernetes.Interface, session string) (int, error) {
	sel := metav1.ListOptions{LabelSelector: managedBy + ",hookback.dev/session=" + session}
	a := client.AdmissionregistrationV1()
	m, err := a.MutatingWebhookConfigurations().List(ctx, sel)
	if err != nil {
		return 0, err
	}
	v, err := a.ValidatingWebhookConfigurations().List(ctx, sel)
	if err != nil {
		return 0, err
	}
	l, err := client.CoordinationV1().Leases("").List(ctx, sel)
	if err != nil {
		return 0, err
	}
	return len(m.Items) + len(v.Items) + len(l.Items), nil
}

// optIn is seed 002's namespace label, which pod-name and pod-lifespan select.
var optIn = map[string]string{"admission-webhook": "enabled"}

// namespace creates a namespace deleted at the end of the test, labelled
// admission-webhook=enabled so that every built-in selects it.
func namespace(t *testing.T) string {
	t.Helper()
	return namespaceLabelled(t, optIn)
}

// namespaceLabelled is namespace with labels instead (nil: none).
func namespaceLabelled(t *testing.T, labels map[string]string) string {
	t.Helper()
	ctx := context.Background()
	ns, err := env.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-", Labels: labels},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	eventually(t, "default service account in "+ns.Name, func(ctx context.Context) (bool, error) {
		_, err := env.client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	return ns.Name
}

func repoPath(parts ...string) string {
	return env.repo + "/" + strings.Join(parts, "/")
}

func itoa(i int) string { return strconv.Itoa(i) }

// get fetches url and returns the body, failing the test on any error.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}
