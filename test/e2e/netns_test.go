package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// TestNetnsAdvertisesVethAddress proves reachability on a topology where
// loopback is wrong: kube-apiserver and etcd run inside a network namespace,
// reachable from the root namespace only through a veth pair, and hookback
// runs in the root namespace without --advertise-address. It must pick the
// host end of the veth (strategy route), pass the canary verification
// through that apiserver, and serve a real pod admission.
//
// Only loopback and the two addresses of the test's own veth pair are used.
func TestNetnsAdvertisesVethAddress(t *testing.T) {
	requireLocal(t, "runs hack/cluster's etcd and kube-apiserver binaries in a test-made network namespace")
	requireNetns(t)
	n, kc, client := netnsCluster(t)
	ctx := context.Background()

	out, errOut, code := hookback(t, kc, "check")
	if want := "Advertise: " + n.hostIP + " (strategy route:"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("hookback check exit %d, want a line starting %q\nstdout:\n%s\nstderr:\n%s", code, want, out, errOut)
	}

	// The apiserver is at an address no interface of this namespace has,
	// and the context is no local distribution's: a cluster that is not
	// local, where start refuses to register cluster-wide.
	session := sessionFor(t)
	out, errOut, code = hookback(t, kc, append(startArgs(t, session, freePort(t), "127.0.0.1:"+itoa(freePort(t))),
		"--webhooks", "pod-name", "--controllers", "none")...)
	for _, want := range []string{"refusing to register cluster-wide on a cluster that is not local", "server " + n.nsIP + " is not on this machine",
		"--namespace NS", "--only-mine", "--all-namespaces"} {
		if code == 0 || !strings.Contains(errOut, want) {
			t.Errorf("unscoped start on a cluster that is not local: exit %d, stderr lacks %q:\n%s", code, want, errOut)
		}
	}
	if n, err := sessionObjectsOn(ctx, client, session); err != nil || n != 0 {
		t.Errorf("the refused start left %d objects (%v), want none", n, err)
	}

	// Naming the namespace scopes it (and opts it in to pod-name).
	p := startWith(t, kc, "--webhooks", "pod-name", "--controllers", "none", "--namespace", "default")
	p.ready(t)
	chosen := logLine(p.stderr.String(), "advertise address chosen")
	if !strings.Contains(chosen, "address="+n.hostIP+" ") || !strings.Contains(chosen, "strategy=route") {
		t.Errorf("want the veth host address %s chosen by strategy route, got %q", n.hostIP, chosen)
	}
	t.Logf("hookback chose: %s", chosen)
	if !strings.Contains(p.stdout.String(), "verified: the apiserver called back") {
		t.Errorf("ready banner does not say the canary was verified:\n%s", p.stdout.String())
	}

	_, err := client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "offensive-x"},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "c", Image: "registry.invalid/pause"}},
		},
	}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pod name contains "offensive"`) {
		t.Fatalf("creating pod offensive-x: err = %v, want a denial by the pod-name webhook", err)
	}
	// hookback logs the admission after it has answered: poll for the line.
	var admission string
	eventually(t, "the admission log line of pod offensive-x", func(context.Context) (bool, error) {
		admission = logLine(p.stderr.String(), "webhook=pod-name resource=pods operation=CREATE namespace=default name=offensive-x")
		return admission != "", nil
	})
	if !strings.Contains(admission, "decision=denied") {
		t.Errorf("admission of pod offensive-x not logged as denied: %q", admission)
	}
	t.Logf("the apiserver in netns %s called back: %s", n.name, admission)
}

// netnsCluster runs etcd and kube-apiserver inside a new network namespace,
// the apiserver on the namespace's veth address, and returns the namespace,
// an admin kubeconfig and a client for it. Everything stops when the test ends.
func netnsCluster(t *testing.T) (*netns, string, kubernetes.Interface) {
	t.Helper()
	bin := clusterBinDir(t)
	n := newNetns(t)
	dir := t.TempDir()
	pki := writePKI(t, dir, n.nsIP)

	// etcd listens on the namespace's own loopback: the main local cluster's
	// etcd in the root namespace is untouched, even on the same ports.
	n.run(t, filepath.Join(bin, "etcd"), "--name=netns", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
		"--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
		"--initial-cluster=netns=http://127.0.0.1:2380", "--unsafe-no-fsync")
	apiserver := n.run(t, filepath.Join(bin, "kube-apiserver"),
		"--bind-address="+n.nsIP, "--advertise-address="+n.nsIP, "--secure-port=6443",
		"--etcd-servers=http://127.0.0.1:2379",
		"--tls-cert-file="+pki.servingCert, "--tls-private-key-file="+pki.servingKey,
		"--client-ca-file="+pki.caCert,
		"--service-account-key-file="+pki.saPub, "--service-account-signing-key-file="+pki.saKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--authorization-mode=RBAC", "--service-cluster-ip-range=10.96.0.0/24",
		"--cert-dir="+filepath.Join(dir, "apiserver-certs"))

	kc := pki.kubeconfig(t, "https://"+net.JoinHostPort(n.nsIP, "6443"))
	client := clientFor(t, kc)
	waitReadyz(t, client, apiserver)
	// No controller-manager runs in the namespace, so nothing creates the
	// default ServiceAccount that ServiceAccount admission looks up.
	if _, err := client.CoreV1().ServiceAccounts("default").Create(context.Background(), &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create default ServiceAccount: %v", err)
	}
	return n, kc, client
}

// requireNetns skips the test, saying why, where network namespaces cannot
// be made.
func requireNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: creating a network namespace and a veth pair needs root")
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
		t.Skipf("skipped: `ip netns` is unavailable (iproute2 missing?): %v %s", err, out)
	}
}

// clusterBinDir is where hack/cluster/build caches kube-apiserver and etcd.
func clusterBinDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command(repoPath("hack", "cluster", "build"), "--print-dir").Output()
	if err != nil {
		t.Fatalf("hack/cluster/build --print-dir: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	dir := lines[len(lines)-1]
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			t.Skipf("skipped: %s is not built (run hack/cluster/build): %v", b, err)
		}
	}
	return dir
}

// netns is a network namespace joined to the root namespace by a veth pair
// on 10.203.X.0/30: hostIP on the root side, nsIP inside.
type netns struct {
	name, hostIP, nsIP string
}

// newNetns creates the namespace and the veth pair; both are deleted when
// the test ends. X is chosen so that no address of this machine is in the
// /30 and no namespace of that name exists (another run's).
func newNetns(t *testing.T) *netns {
	t.Helper()
	return newNetnsAt(t, 1, 2)
}

// newNetnsAt is newNetns with the last octets of the host and namespace
// ends (1 or 2 each) chosen by the caller.
func newNetnsAt(t *testing.T, hostOctet, nsOctet int) *netns {
	t.Helper()
	start := os.Getpid() % 250
	for i := range 250 {
		x := 1 + (start+i)%250
		host, ns := fmt.Sprintf("10.203.%d.%d", x, hostOctet), fmt.Sprintf("10.203.%d.%d", x, nsOctet)
		if subnetInUse(t, host) {
			continue
		}
		n := &netns{name: fmt.Sprintf("hookback-e2e-%d", x), hostIP: host, nsIP: ns}
		out, err := exec.Command("ip", "netns", "add", n.name).CombinedOutput()
		if err != nil && strings.Contains(string(out), "File exists") {
			continue
		}
		if err != nil {
			t.Skipf("skipped: cannot create a network namespace here: %v %s", err, out)
		}
		veth := fmt.Sprintf("hbe2e%d", x)
		t.Cleanup(func() {
			// Deleting the namespace destroys its veth end and so the pair,
			// but asynchronously: delete the host end too, so a quick rerun
			// finds the name free.
			_ = exec.Command("ip", "link", "del", veth+"h").Run()
			if out, err := exec.Command("ip", "netns", "del", n.name).CombinedOutput(); err != nil {
				t.Errorf("delete netns %s: %v %s", n.name, err, out)
			}
		})
		n.setup(t, veth)
		return n
	}
	t.Fatal("no free 10.203.X.0/30 for the veth pair")
	return nil
}

func (n *netns) setup(t *testing.T, veth string) {
	t.Helper()
	steps := [][]string{
		{"ip", "link", "add", veth + "h", "type", "veth", "peer", "name", veth + "n"},
		{"ip", "link", "set", veth + "n", "netns", n.name},
		{"ip", "addr", "add", n.hostIP + "/30", "dev", veth + "h"},
		{"ip", "link", "set", veth + "h", "up"},
		{"ip", "netns", "exec", n.name, "ip", "addr", "add", n.nsIP + "/30", "dev", veth + "n"},
		{"ip", "netns", "exec", n.name, "ip", "link", "set", veth + "n", "up"},
		{"ip", "netns", "exec", n.name, "ip", "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", strings.Join(s, " "), err, out)
		}
	}
}

// subnetInUse reports whether this machine already has an address in the
// /30 of host.
func subnetInUse(t *testing.T, host string) bool {
	t.Helper()
	_, want, _ := net.ParseCIDR(host + "/30")
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && want.Contains(n.IP) {
			return true
		}
	}
	return false
}

// nsProc is a process running inside the namespace.
type nsProc struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	// signal delivers a signal to the process; nil: to cmd's process. A
	// container's process is not cmd's (the engine's client is).
	signal func(syscall.Signal)
}

func (p *nsProc) send(sig syscall.Signal) {
	if p.signal != nil {
		p.signal(sig)
		return
	}
	_ = p.cmd.Process.Signal(sig)
}

// run starts path inside the namespace, logging to a file; it is stopped
// when the test ends and its log is shown if the test failed.
func (n *netns) run(t *testing.T, path string, args ...string) *nsProc {
	t.Helper()
	// `ip netns exec` execs the binary itself, so the pid is the process.
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.name, path}, args...)...)
	return startProc(t, filepath.Base(path), "in netns "+n.name, cmd, nil)
}

// startProc starts cmd, logging to a file, and stops it when the test ends
// (signal as nsProc's); where says where it runs, for errors.
func startProc(t *testing.T, name, where string, cmd *exec.Cmd, signal func(syscall.Signal)) *nsProc {
	t.Helper()
	p := &nsProc{name: name, done: make(chan struct{}), signal: signal}
	p.log = filepath.Join(t.TempDir(), p.name+".log")
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = withoutProxy(os.Environ())
	cmd.Stdout, cmd.Stderr = f, f
	// If the test binary dies, the control plane must not outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s %s: %v", p.name, where, err)
	}
	p.cmd = cmd
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	t.Cleanup(func() {
		p.send(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			p.send(syscall.SIGKILL)
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s log (last lines):\n%s", p.name, tail(p.log, 30))
		}
	})
	return p
}

// stop sends sig and waits for the process to exit.
func (p *nsProc) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	p.send(sig)
	select {
	case <-p.done:
	case <-time.After(deadline):
		t.Fatalf("%s did not exit within %s of %s:\n%s", p.name, deadline, sig, tail(p.log, 20))
	}
}

func (p *nsProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitReadyz waits for the apiserver's /readyz, failing early if it exits.
// Its deadline is longer than the shared one: a cold apiserver on a loaded
// 2-core machine takes a while.
func waitReadyz(t *testing.T, client kubernetes.Interface, apiserver *nsProc) {
	t.Helper()
	end := time.Now().Add(2 * deadline)
	var last error
	for time.Now().Before(end) {
		if apiserver.exited() {
			t.Fatalf("kube-apiserver exited:\n%s", tail(apiserver.log, 30))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		body, err := client.CoreV1().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		cancel()
		if err == nil && string(body) == "ok" {
			return
		}
		last = err
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("kube-apiserver not ready within %s: %v\n%s", 2*deadline, last, tail(apiserver.log, 30))
}

// startWith is start with another cluster's kubeconfig.
func startWith(t *testing.T, kubeconfig string, extra ...string) *proc {
	t.Helper()
	return startEnv(t, append(withoutProxy(os.Environ()), "KUBECONFIG="+kubeconfig), extra...)
}

// withoutProxy drops proxy settings: traffic must stay on the veth pair.
func withoutProxy(environ []string) []string {
	out := environ[:0:0]
	for _, kv := range environ {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasSuffix(strings.ToLower(k), "_proxy") {
			out = append(out, kv)
		}
	}
	return out
}

func clientFor(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil } // straight to the veth
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// logLine returns the first line of log containing substr.
func logLine(log, substr string) string {
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), substr) {
			return sc.Text()
		}
	}
	return ""
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
