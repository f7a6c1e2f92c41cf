package e2e

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/tunnel"
)

// TestTunnelStart runs `hookback start --tunnel` where the apiserver cannot
// reach it: hookback runs in a test-made network namespace, listening on
// that namespace's loopback, and reaches the apiserver through a forwarder.
// The session deploys its relay; this test stands in for the relay pod's
// kubelet and container: the relay pod lands on a kwok node whose pod CIDR
// gives it the namespace's veth address, a `hookback relay` process runs
// there with the session's secret, and kwok forwards the pod's control port
// to it. So the apiserver calls the relay Service's real EndpointSlice, and
// hookback attaches through the apiserver's real pod port-forward. It shows
// admissions served through the tunnel, concurrent ones each answered
// right, fail-open and recovery when the relay process dies and when the
// port-forward is cut, a restart after kill -9 attaching to the relay the
// dead run left, the relay removed when the session stops, and a crashed
// session's relay removed by cleanup.
func TestTunnelStart(t *testing.T) {
	ctx := context.Background()
	lab := newTunnelLab(t)
	n, tunnelNS, session, name, kubeconfig := lab.n, lab.ns, lab.session, lab.relay, lab.kubeconfig
	work := namespace(t)
	health := "http://" + net.JoinHostPort(n.nsIP, "8081")
	// hookback and the relay share the namespace, where a pod would have
	// one of its own: hookback's port is not the relay's 8443, which the
	// relay from the image binds on every address.
	const hookbackPort = "7443"
	// With HOOKBACK_E2E_IMAGE and podman the relay runs from the image, as
	// the relay pod says; else as a process of the test's binary.
	image, engine := os.Getenv("HOOKBACK_E2E_IMAGE"), ""
	if image != "" {
		var why string
		if engine, why = lookupEngine(t, image); why != "" {
			t.Logf("the relay runs as a process, not from %s: %s", image, why)
			image = ""
		} else {
			t.Logf("the relay runs from image %s, by %s", image, engine)
		}
	}

	stateDir := t.TempDir()
	startHookback := func() *nsProc {
		return n.run(t, env.binary, "start", "--kubeconfig", kubeconfig, "--session", session, "--state-dir", stateDir,
			"--port", hookbackPort, "--health-address", net.JoinHostPort(n.nsIP, "8081"), "--inspector-address", "",
			"--webhooks", "pod-name", "--controllers", "none", "--verify-timeout", "30s",
			"--tunnel", "--tunnel-namespace", tunnelNS, "--relay-image", cmp.Or(image, "registry.invalid/hookback:e2e"))
	}
	hb := startHookback()

	// The relay pod, where the session deployed it, at the namespace's address.
	pod, secret := lab.relayPod(t, hb)
	relays := 0
	startRelay := func() *nsProc {
		if image != "" {
			relays++
			return relayContainer(t, engine, image, n, pod, secret, relays)
		}
		return lab.relayProcess(t, secret)
	}
	relayProc := startRelay()
	forwardRelayPod(t, tunnelNS, pod.Name, n.nsIP, tunnel.DefaultControlPort)

	waitLog(t, hb, "hookback is ready", "the session ready")
	if line := logLine(readFile(t, hb.log), "hookback is ready"); !strings.Contains(line, "verified: the apiserver called back") {
		t.Fatalf("not verified through the tunnel: %s", line)
	}
	checkTunnelRegistration(t, session, tunnelNS, name)
	if !strings.Contains(readFile(t, hb.log), "tunnel:   relay "+tunnelNS+"/"+name+", through the apiserver's port-forward to 127.0.0.1:"+hookbackPort) {
		t.Errorf("the banner does not name the relay and the loopback listener:\n%s", tail(hb.log, 20))
	}

	// Admissions through the tunnel, concurrent ones each answered right.
	if err := tunnelAdmissions(ctx, work, 24); err != nil {
		t.Fatalf("through the tunnel: %v", err)
	}
	allowed := `hookback_admission_requests_total{decision="allowed",webhook="pod-name"}`
	if v := metricAt(health, allowed); v < 12 {
		t.Errorf("%s = %v, want at least 12: the allowed pods did not all reach hookback", allowed, v)
	}
	if v := metricAt(health, "hookback_tunnel_up "); v != 1 {
		t.Errorf("hookback_tunnel_up = %v, want 1", v)
	}
	if v := metricAt(health, "hookback_tunnel_streams_total "); v < 1 {
		t.Errorf("hookback_tunnel_streams_total = %v, want at least 1", v)
	}

	// The relay process dies: the webhooks fail open, one warning says so;
	// it comes back and the canary verifies again.
	relayProc.stop(t, syscall.SIGKILL)
	waitLog(t, hb, "reverse tunnel down", "the tunnel seen down")
	eventually(t, "a banned pod admitted while the tunnel is down (failurePolicy Ignore)", func(ctx context.Context) (bool, error) {
		_, err := env.client.CoreV1().Pods(work).Create(ctx, testPod("offensive-down"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, nil
	})
	startRelay()
	waitLogCount(t, hb, "verified again", 1, "verified again after the relay restarted")
	if err := tunnelAdmissions(ctx, work, 8); err != nil {
		t.Fatalf("after the relay restarted: %v", err)
	}

	// The port-forward is cut: the apiserver goes away and comes back.
	for _, step := range []string{"stop", "start"} {
		if out, err := exec.Command(repoPath("hack", "cluster", "apiserver"), step).CombinedOutput(); err != nil {
			t.Fatalf("hack/cluster/apiserver %s: %v\n%s", step, err, out)
		}
	}
	waitLogCount(t, hb, "verified again", 2, "verified again after the port-forward was cut")
	eventually(t, "admissions through the tunnel after the port-forward was cut", func(ctx context.Context) (bool, error) {
		return true, tunnelAdmissions(ctx, work, 8)
	})

	// hookback is killed and started again, same session, as after a crash:
	// it takes over the relay the dead run left, whose pod only knows that
	// run's secret, attaches and verifies.
	hb.stop(t, syscall.SIGKILL)
	hb = startHookback()
	waitLog(t, hb, "hookback is ready", "the restarted session ready")
	if log := readFile(t, hb.log); !strings.Contains(log, "reusing the relay a previous run of this session left") ||
		!strings.Contains(logLine(log, "hookback is ready"), "verified: the apiserver called back") {
		t.Fatalf("the restarted session did not attach to the relay left running:\n%s", tail(hb.log, 20))
	}
	if err := tunnelAdmissions(ctx, work, 8); err != nil {
		t.Fatalf("through the tunnel after the restart: %v", err)
	}

	// The session stops: configurations, relay and its namespace go.
	hb.stop(t, syscall.SIGTERM)
	if !strings.Contains(readFile(t, hb.log), "deregistered") {
		t.Errorf("no clean deregistration:\n%s", tail(hb.log, 20))
	}
	checkRelayGone(t, tunnelNS, name)
	for _, l := range strings.Split(readFile(t, hb.log), "\n") {
		if strings.Contains(l, "tunnel") || strings.Contains(l, "verified") || strings.Contains(l, "relay") {
			t.Log(l)
		}
	}

	// A crashed session leaves its relay, in a namespace of its own: cleanup
	// removes it, and the namespace the session created.
	crashNS := tunnelNS + "-crash"
	crashed := n.run(t, env.binary, "start", "--kubeconfig", kubeconfig, "--session", session, "--state-dir", t.TempDir(),
		"--port", hookbackPort, "--health-address", net.JoinHostPort(n.nsIP, "8081"), "--inspector-address", "",
		"--webhooks", "pod-name", "--controllers", "none", "--lease-duration", "2s",
		"--tunnel", "--tunnel-namespace", crashNS, "--relay-image", "registry.invalid/hookback:e2e")
	waitLog(t, crashed, "relay deployed", "the second session's relay deployed")
	crashed.stop(t, syscall.SIGKILL)
	if _, err := env.client.AppsV1().Deployments(crashNS).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the crashed session's relay: %v", err)
	}
	// Without --tunnel-namespace: cleanup finds the relay wherever its
	// session put it.
	out, errOut, code := hookback(t, env.kubeconfig, "cleanup", "--session", session)
	if code != 0 || !strings.Contains(out, session) {
		t.Fatalf("hookback cleanup exit %d:\n%s\n%s", code, out, errOut)
	}
	checkRelayGone(t, crashNS, name)
}

// tunnelLab is the stage of a --tunnel e2e: hookback's network namespace
// (a laptop the apiserver cannot reach) whose end is the relay pod's
// address on a node of its own, the tunnel namespace, the session and its
// relay's name, and an admin kubeconfig that reaches the apiserver from
// the namespace.
type tunnelLab struct {
	n                              *netns
	ns, session, relay, kubeconfig string
}

func newTunnelLab(t *testing.T) *tunnelLab {
	t.Helper()
	requireLocal(t, "needs kwok's PortForward resource and kube-apiserver's --enable-aggregator-routing=true")
	requireNetns(t)
	// The namespace end is .1: the first address kwok gives a pod from the
	// node's pod CIDR 10.203.X.0/30.
	l := &tunnelLab{n: newNetnsAt(t, 2, 1), ns: "hookback-tunnel-" + strconv.FormatInt(time.Now().UnixNano()%1e8, 36), session: sessionFor(t)}
	relayNode(t, l.n)
	l.relay = "hookback-relay-" + l.session
	l.kubeconfig = filepath.Join(t.TempDir(), "admin.kubeconfig")
	writeAdminKubeconfig(t, l.kubeconfig, forwardToAPIServer(t, l.n.hostIP))
	return l
}

// relayPod waits for the session's relay pod, at the namespace's address,
// and returns it with the secret the session gave its relay.
func (l *tunnelLab) relayPod(t *testing.T, hb *nsProc) (*corev1.Pod, string) {
	t.Helper()
	pod := waitRelayPod(t, l.ns, l.relay, hb)
	if pod.Status.PodIP != l.n.nsIP {
		t.Fatalf("relay pod %s has IP %s, want %s (kwok gives the first address of node %s's pod CIDR)", pod.Name, pod.Status.PodIP, l.n.nsIP, pod.Spec.NodeName)
	}
	sec, err := env.client.CoreV1().Secrets(l.ns).Get(context.Background(), l.relay, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the relay's Secret: %v", err)
	}
	return pod, string(sec.Data[tunnel.SecretKey])
}

// relayProcess runs `hookback relay` in the namespace, where the relay pod
// would, with the session's secret.
func (l *tunnelLab) relayProcess(t *testing.T, secret string) *nsProc {
	t.Helper()
	return l.n.run(t, "/usr/bin/env", "HOOKBACK_RELAY_SECRET="+secret, env.binary, "relay",
		"--listen", net.JoinHostPort(l.n.nsIP, "8443"), "--control", net.JoinHostPort(l.n.nsIP, "9443"))
}

// relayNode adds a kwok node whose pod CIDR starts at n's namespace end and
// cordons the shared node while the test runs, so the relay pod lands on
// it with that address. hack/cluster/up undoes both if the test dies.
func relayNode(t *testing.T, n *netns) {
	t.Helper()
	ctx := context.Background()
	cidr := strings.TrimSuffix(n.nsIP, ".1") + ".0/30"
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "hookback-e2e-" + strings.ReplaceAll(n.nsIP, ".", "-"),
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			Labels:      map[string]string{"type": "kwok", "hookback.dev/e2e-node": "tunnel", "kubernetes.io/os": "linux"}},
		Spec: corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}},
		Status: corev1.NodeStatus{
			Addresses:   []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
			Capacity:    corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
			Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")},
		},
	}
	cordon := func(name string, on bool) error {
		patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on)
		_, err := env.client.CoreV1().Nodes().Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	if err := cordon("kwok-node-0", true); err != nil {
		t.Fatalf("cordon kwok-node-0: %v", err)
	}
	// Cleanups run last first: the test node is gone before the shared
	// one takes pods again, so no later test's pod lands on it.
	t.Cleanup(func() {
		if err := cordon("kwok-node-0", false); err != nil {
			t.Errorf("uncordon kwok-node-0: %v", err)
		}
	})
	if _, err := env.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node %s: %v", node.Name, err)
	}
	t.Cleanup(func() {
		_ = cordon(node.Name, true)
		_ = env.client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{})
		eventually(t, "node "+node.Name+" deleted", func(ctx context.Context) (bool, error) {
			_, err := env.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
	})
	eventually(t, "node "+node.Name+" ready", func(ctx context.Context) (bool, error) {
		got, err := env.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
}

// waitRelayPod waits for the session's relay pod to run.
func waitRelayPod(t *testing.T, ns, name string, hb *nsProc) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, "the relay pod running", func(ctx context.Context) (bool, error) {
		if hb.exited() {
			t.Fatalf("hookback exited:\n%s", tail(hb.log, 30))
		}
		pods, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "hookback.dev/relay=" + name})
		if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.Phase != corev1.PodRunning {
			return false, err
		}
		pod = &pods.Items[0]
		return true, nil
	})
	return pod
}

// forwardRelayPod has kwok forward the relay pod's control port to the
// relay process at addr:port.
func forwardRelayPod(t *testing.T, ns, pod, addr string, port int) {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	pf := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "PortForward",
		"metadata": map[string]any{"name": pod, "namespace": ns},
		"spec": map[string]any{"forwards": []any{map[string]any{
			"ports":  []any{int64(tunnel.DefaultControlPort)},
			"target": map[string]any{"address": addr, "port": int64(port)},
		}}},
	}}
	if _, err := dyn.Resource(portForwards).Namespace(ns).Create(context.Background(), pf, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create the PortForward of pod %s: %v", pod, err)
	}
}

// checkTunnelRegistration checks that the session's configurations call
// the relay's Service, never a URL.
func checkTunnelRegistration(t *testing.T, session, ns, name string) {
	t.Helper()
	list, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(context.Background(),
		metav1.ListOptions{LabelSelector: registration.LabelSession + "=" + session})
	if err != nil || len(list.Items) == 0 {
		t.Fatalf("the session's validating configurations: %v (%d)", err, len(list.Items))
	}
	for _, c := range list.Items {
		for _, h := range c.Webhooks {
			s := h.ClientConfig.Service
			if h.ClientConfig.URL != nil || s == nil || s.Namespace != ns || s.Name != name || s.Port == nil || *s.Port != 443 || len(h.ClientConfig.CABundle) == 0 {
				t.Errorf("webhook %s: clientConfig %+v, want service %s/%s:443 with a caBundle", h.Name, h.ClientConfig, ns, name)
			}
		}
	}
}

// tunnelAdmissions creates n pods concurrently (dry-run), every other one
// with a name pod-name denies, and checks that each got its own answer.
func tunnelAdmissions(ctx context.Context, ns string, n int) error {
	var mu sync.Mutex
	var errs []string
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("web-%d-%d", i, time.Now().UnixNano()%1e6)
			if i%2 == 1 {
				name = "offensive-" + name
			}
			_, err := env.client.CoreV1().Pods(ns).Create(ctx, testPod(name), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			denied := apierrors.IsForbidden(err) && strings.Contains(err.Error(), `pod name contains "offensive"`)
			if (i%2 == 1) != denied || (i%2 == 0 && err != nil) {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("pod %s: %v", name, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d answers wrong, first: %s", len(errs), n, errs[0])
	}
	return nil
}

// checkRelayGone waits for the relay's objects and namespace to go.
func checkRelayGone(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, "the relay's objects deleted", func(ctx context.Context) (bool, error) {
		_, e1 := env.client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		_, e2 := env.client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		_, e3 := env.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(e1) && apierrors.IsNotFound(e2) && apierrors.IsNotFound(e3), nil
	})
	got, err := env.client.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	if err == nil && got.DeletionTimestamp == nil {
		t.Errorf("namespace %s, created by the session, is still there", ns)
	}
}

// writeAdminKubeconfig writes the admin kubeconfig with server instead of
// the apiserver's loopback address.
func writeAdminKubeconfig(t *testing.T, path, server string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		// The apiserver's certificate names localhost, not the veth address.
		c.Server, c.TLSServerName = server, "localhost"
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}

// waitLog waits for substr in a namespace process's log.
func waitLog(t *testing.T, p *nsProc, substr, what string) {
	t.Helper()
	waitLogCount(t, p, substr, 1, what)
}

// waitLogCount waits for n lines containing substr in p's log.
func waitLogCount(t *testing.T, p *nsProc, substr string, n int, what string) {
	t.Helper()
	eventually(t, what, func(context.Context) (bool, error) {
		if p.exited() {
			t.Fatalf("%s exited:\n%s", p.name, tail(p.log, 30))
		}
		return strings.Count(readFile(t, p.log), substr) >= n, nil
	})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
