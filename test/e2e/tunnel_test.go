package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hookback/hookback/internal/syncbuf"
	"github.com/hookback/hookback/tunnel"
)

// relayControlPort is the relay pod's control port, as start --tunnel
// would deploy it.
const relayControlPort = 9443

var portForwards = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "portforwards"}

// TestTunnelThroughPortForward carries TLS connections through the reverse
// tunnel with the apiserver's real pod port-forward in the middle: a fake
// relay pod's control port is forwarded by kwok (its PortForward resource)
// to a `hookback relay` process on loopback, and the laptop side attaches
// through client-go's port-forward (WebSocket, SPDY fallback) exactly as
// start --tunnel does. It shows interleaved concurrent requests answered
// correctly, then recovery after the relay process is killed and after the
// port-forward itself is cut by restarting the apiserver.
func TestTunnelThroughPortForward(t *testing.T) {
	if !env.local {
		t.Skip("skipped: needs kwok's PortForward resource of the local control plane")
	}
	ctx := context.Background()
	ns := namespace(t)
	listen, control := freePort(t), freePort(t)
	startRelay := func() *exec.Cmd {
		cmd := exec.Command(env.binary, "relay", "--listen", fmt.Sprintf("127.0.0.1:%d", listen), "--control", fmt.Sprintf("127.0.0.1:%d", control))
		cmd.Env = append(os.Environ(), "HOOKBACK_RELAY_SECRET=e2e-secret")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		var out syncbuf.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		eventually(t, "the relay ready", func(context.Context) (bool, error) {
			return strings.Contains(out.String(), "hookback is ready"), nil
		})
		return cmd
	}
	relayCmd := startRelay()
	forwardPod(t, ns, "relay", control)

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		_, _ = w.Write(b)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()

	rc, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var ups, downs atomic.Int32
	// The attacher's log says why it is not attached, when a wait times out.
	var attachLog syncbuf.Buffer
	upsAtLeast := func(n int32) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) {
			if ups.Load() >= n {
				return true, nil
			}
			lines := strings.Split(strings.TrimSpace(attachLog.String()), "\n")
			return false, fmt.Errorf("not attached; the attacher last logged: %s", lines[len(lines)-1])
		}
	}
	a, err := tunnel.NewAttacher(tunnel.AttachOptions{
		Log: slog.New(slog.NewTextHandler(&attachLog, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Dialer: &tunnel.PortForward{Config: rc, Client: env.client, Namespace: ns, Port: relayControlPort,
			Pod: func(context.Context) (string, error) { return "relay", nil }},
		Secret: "e2e-secret", Local: srv.Listener.Addr().String(),
		OnUp: func() { ups.Add(1) }, OnDown: func() { downs.Add(1) },
		MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	actx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Start(actx) }()
	defer func() { stop(); <-done }()

	through := func(what string) {
		t.Helper()
		eventually(t, "requests through the tunnel "+what, func(context.Context) (bool, error) {
			return true, tunnelRequests(srv, listen, 32)
		})
	}
	eventually(t, "attached through the port-forward", upsAtLeast(1))
	through("after attaching")

	// The relay process dies and comes back (the relay pod restarted).
	_ = relayCmd.Process.Kill()
	_ = relayCmd.Wait()
	eventually(t, "the tunnel seen down", func(context.Context) (bool, error) { return downs.Load() >= 1, nil })
	startRelay()
	eventually(t, "attached again after the relay restarted", upsAtLeast(2))
	through("after the relay restarted")

	// The port-forward is cut: the apiserver goes away and comes back.
	before := ups.Load()
	if out, err := exec.Command(repoPath("hack", "cluster", "apiserver"), "stop").CombinedOutput(); err != nil {
		t.Fatalf("hack/cluster/apiserver stop: %v\n%s", err, out)
	}
	if out, err := exec.Command(repoPath("hack", "cluster", "apiserver"), "start").CombinedOutput(); err != nil {
		t.Fatalf("hack/cluster/apiserver start: %v\n%s", err, out)
	}
	eventually(t, "attached again after the port-forward was cut", upsAtLeast(before+1))
	through("after the port-forward was cut")
}

// forwardPod creates a pod on the kwok node and has kwok forward its
// relay control port to 127.0.0.1:target.
func forwardPod(t *testing.T, ns, name string, target int) {
	t.Helper()
	ctx := context.Background()
	if _, err := env.client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		// Bound to hack/cluster's node: the test is about port-forward, so
		// it does not wait on the scheduler.
		Spec: corev1.PodSpec{NodeName: "kwok-node-0", Containers: []corev1.Container{{Name: "relay", Image: "registry.invalid/hookback",
			Ports: []corev1.ContainerPort{{Name: "control", ContainerPort: relayControlPort}}}},
			// The apiserver restarts in the tunnel tests leave kwok's node
			// NotReady, and so tainted, for up to a minute afterwards; the
			// fake pod needs no healthy node.
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists},
			}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod "+name+" running", func(ctx context.Context) (bool, error) {
		p, err := env.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.Status.Phase == corev1.PodRunning {
			return err == nil, err
		}
		// Said on a timeout: who has not done their part, the scheduler
		// or kwok.
		var conds []string
		for _, c := range p.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s %s", c.Type, c.Status, c.Message))
		}
		return false, fmt.Errorf("phase %q on node %q, conditions %q", p.Status.Phase, p.Spec.NodeName, conds)
	})
	forwardRelayPod(t, ns, name, "127.0.0.1", target)
}

// tunnelRequests sends n concurrent requests, over HTTP/2 and HTTP/1.1,
// to the relay's listen port on loopback, each with its own body, and
// checks each answer is its request's.
func tunnelRequests(srv *httptest.Server, port, n int) error {
	var mu sync.Mutex
	var errs []string
	var wg sync.WaitGroup
	for _, h2 := range []bool{true, false} {
		tr := srv.Client().Transport.(*http.Transport).Clone()
		if !h2 {
			tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
		}
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
		}
		c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		for i := range n {
			wg.Go(func() {
				body := strings.Repeat(fmt.Sprintf("h2=%v request %d;", h2, i), 50+i*31)
				resp, err := c.Post("https://127.0.0.1/", "text/plain", strings.NewReader(body))
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if string(b) != body {
						err = fmt.Errorf("answer of %d bytes is not its own request's (%d bytes)", len(b), len(body))
					}
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d requests failed, first: %s", len(errs), 2*n, errs[0])
	}
	return nil
}
