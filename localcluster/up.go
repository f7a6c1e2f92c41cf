package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Ready describes a cluster Up made ready.
type Ready struct {
	Kubeconfig string
	Server     string
	// Reused: the cluster was already running and healthy.
	Reused   bool
	Binaries Binaries
	Took     time.Duration
}

// Up starts the cluster, or reuses it when it already runs healthy, and
// waits until it is ready: /readyz ok, the fake node Ready and (with a
// controller-manager) the default ServiceAccount made. It writes the admin
// kubeconfig, ca.crt and ca.key into Dir. Binaries are resolved first,
// outside the cluster's lock, so that two clusters share one download; two
// Ups of one cluster make one cluster.
func (c *Cluster) Up(ctx context.Context) (Ready, error) {
	start := time.Now()
	b, err := Resolve(ctx, c.o.Binaries)
	if err != nil {
		return Ready{}, err
	}
	if _, err := os.Stat(c.o.Dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(c.o.Dir, 0o755); err != nil {
			return Ready{}, err
		}
		// Recorded so that Down removes the directory it made, and only that.
		if err := c.writeState(state{Name: c.o.Name, CreatedDir: true}); err != nil {
			return Ready{}, err
		}
	}
	lock, err := c.lock(ctx)
	if err != nil {
		return Ready{}, err
	}
	defer lock.unlock()
	prev, _ := c.readState()
	why := c.healthy(ctx, prev.Binaries)
	if errors.Is(why, errRevivable) {
		if err := c.revive(ctx, prev.Binaries); err != nil {
			return Ready{}, err
		}
		why = c.healthy(ctx, prev.Binaries)
	}
	reused := why == nil
	if reused {
		b = prev.Binaries
		c.logf("cluster %s is already running; reusing it", c.o.Name)
	} else {
		if _, err := os.Stat(c.workdir); err == nil {
			c.logf("cluster %s is there but not healthy (%v); recreating it", c.o.Name, why)
			if err := c.down(ctx, false); err != nil {
				return Ready{}, err
			}
		}
		if err := c.writeState(state{Name: c.o.Name, Binaries: b, CreatedDir: prev.CreatedDir}); err != nil {
			return Ready{}, err
		}
		if err := c.createRetrying(ctx, b); err != nil {
			return Ready{}, err
		}
	}
	server, err := c.waitReady(ctx, b)
	if err != nil {
		return Ready{}, err
	}
	if err := c.writeOutputs(); err != nil {
		return Ready{}, err
	}
	return Ready{Kubeconfig: c.KubeconfigPath(), Server: server, Reused: reused, Binaries: b, Took: time.Since(start)}, nil
}

// kwokctl runs kwokctl with our workdir, our binaries first on PATH (it
// prefers a kubectl found there) and no stray KWOK_* settings; its output
// goes to Dir/kwokctl.log and, on failure, into the error.
func (c *Cluster) kwokctl(ctx context.Context, b Binaries, args ...string) error {
	logPath := filepath.Join(c.o.Dir, "kwokctl.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "--- %s kwokctl %s\n", time.Now().Format(time.RFC3339), strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, b.Kwokctl, args...)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "KWOK_") || strings.HasPrefix(kv, "PATH=")
	})
	path := strings.Join(append(b.Dirs(), os.Getenv("PATH")), string(os.PathListSeparator))
	cmd.Env = append(env, "KWOK_WORKDIR="+c.kwokDir, "PATH="+path)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The processes kwokctl starts outlive it: let them keep no pipe of ours.
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kwokctl %s: %w (its output, %s, ends with: %s; component logs: %s)",
			args[0]+" "+args[1], err, logPath, tail(logPath, 3), filepath.Join(c.workdir, "logs"))
	}
	return nil
}

// tail is the last n lines of a log file, at most its last 4 KiB.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 4096 {
		f.Seek(st.Size()-4096, io.SeekStart) //nolint:errcheck // best effort
	}
	b, _ := io.ReadAll(io.LimitReader(f, 4096))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// createRetrying creates the cluster, again (at most 3 times) when a
// component could not bind its port: kwokctl picks free ports by probing, so
// another process (a cluster starting at the same moment) can take one
// before the component binds it.
func (c *Cluster) createRetrying(ctx context.Context, b Binaries) error {
	for attempt := 1; ; attempt++ {
		err := c.create(ctx, b)
		if err == nil || attempt == 3 || !c.portTaken() {
			return err
		}
		c.logf("a port kwokctl picked was taken meanwhile (another cluster starting?); creating the cluster again")
		if err := c.down(ctx, false); err != nil {
			return err
		}
	}
}

// portTaken reports whether a component's log says its address was in use.
func (c *Cluster) portTaken() bool {
	logs, _ := filepath.Glob(filepath.Join(c.workdir, "logs", "*.log"))
	for _, l := range logs {
		if strings.Contains(tail(l, 20), "address already in use") {
			return true
		}
	}
	return false
}

func (c *Cluster) create(ctx context.Context, b Binaries) error {
	if err := os.MkdirAll(c.kwokDir, 0o755); err != nil {
		return err
	}
	policy := filepath.Join(c.kwokDir, "audit-policy.yaml")
	if err := writeFileAtomic(policy, []byte(auditPolicy), 0o644); err != nil {
		return err
	}
	cfg, err := renderKwokctlConfig(configData{
		KubeVersion: c.o.Binaries.KubeVersion, KwokVersion: c.o.Binaries.KwokVersion,
		CacheDir: filepath.Join(c.kwokDir, "cache"), AuditPolicy: policy, B: b,
	})
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(c.kwokDir, "kwok.yaml"), cfg, 0o644); err != nil {
		return err
	}
	c.logf("creating cluster %s in %s (%s)", c.o.Name, c.workdir, b.Origin)
	// --kubeconfig: keep kwokctl away from ~/.kube/config; Up writes its own.
	// --node-lease-duration-seconds 0: no node Leases, so kwok heartbeats
	// through nodes/status (a PATCH every 20-25s that admission sees).
	return c.kwokctl(ctx, b, "create", "cluster", "--name", c.o.Name, "--runtime", "binary",
		"--kubeconfig", filepath.Join(c.kwokDir, "kubeconfig"),
		"--node-lease-duration-seconds", "0", "--timeout", c.o.Wait.String())
}

func (c *Cluster) client() (*kubernetes.Clientset, string, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(c.workdir, "kubeconfig.yaml"))
	if err != nil {
		return nil, "", fmt.Errorf("load the cluster's kubeconfig: %w", err)
	}
	rc.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(rc)
	return cs, rc.Host, err
}

// readyz asks the apiserver for /readyz.
func readyz(ctx context.Context, cs kubernetes.Interface) error {
	b, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return err
	}
	if string(b) != "ok" {
		return fmt.Errorf("/readyz: %s", b)
	}
	return nil
}

// waitFor polls cond every 200ms until it holds or c.o.Wait passes. With a
// b, every 2 s it starts again the components that exited meanwhile (once
// the apiserver is ready: before, kwok's controller exits until it answers,
// and kwokctl's own start retries it).
func (c *Cluster) waitFor(ctx context.Context, b *Binaries, what string, cond func(context.Context) (bool, error)) error {
	start := time.Now()
	var last error
	lastCheck := start
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, c.o.Wait, true, func(ctx context.Context) (bool, error) {
		if b != nil && time.Since(lastCheck) > 2*time.Second {
			lastCheck = time.Now()
			if err := c.revive(ctx, *b); err != nil {
				return false, err
			}
		}
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		if last != nil {
			err = fmt.Errorf("%w (last: %w)", err, last)
		}
		return fmt.Errorf("wait for %s: %w; component logs: %s", what, err, filepath.Join(c.workdir, "logs"))
	}
	c.logf("ok: %s (%.1fs)", what, time.Since(start).Seconds())
	return nil
}

func (c *Cluster) waitReady(ctx context.Context, b Binaries) (string, error) {
	cs, server, err := c.client()
	if err != nil {
		return "", err
	}
	if err := c.waitFor(ctx, nil, "kube-apiserver /readyz", func(ctx context.Context) (bool, error) {
		return readyz(ctx, cs) == nil, nil
	}); err != nil {
		return "", err
	}
	if err := c.checkAPIServerFlags(); err != nil {
		return "", err
	}
	if err := ensureNode(ctx, cs); err != nil {
		return "", err
	}
	if err := c.waitFor(ctx, &b, "node "+nodeName+" Ready", func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	}); err != nil {
		return "", err
	}
	if b.HasControllers() {
		// The controller-manager makes it; pods cannot be created before.
		if err := c.waitFor(ctx, &b, "ServiceAccount default/default", func(ctx context.Context) (bool, error) {
			_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
			return err == nil, err
		}); err != nil {
			return "", err
		}
	}
	return server, nil
}

// checkAPIServerFlags: admission webhooks are what hookback is for; a
// kube-apiserver without RBAC or with admission plugins turned off is not
// the cluster the tests and users expect. Linux only (/proc).
func (c *Cluster) checkAPIServerFlags() error {
	args := c.componentArgs(KubeAPIServer)
	if args == nil {
		return nil
	}
	if !slices.Contains(args, "--authorization-mode=Node,RBAC") {
		return errors.New("kube-apiserver runs without --authorization-mode=Node,RBAC")
	}
	for _, a := range args {
		if strings.HasPrefix(a, "--admission-control=") || strings.HasPrefix(a, "--disable-admission-plugins=") {
			return fmt.Errorf("kube-apiserver runs with admission plugins disabled (%s)", a)
		}
	}
	return nil
}

// ensureNode creates the one fake node kwok runs pods on. Its status is
// accepted on create for Nodes; capacity > allocatable like a real kubelet's.
func ensureNode(ctx context.Context, cs kubernetes.Interface) error {
	arch := "amd64"
	if _, a := platform(); a != "" {
		arch = a
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: nodeName,
			Annotations: map[string]string{
				"kwok.x-k8s.io/node":           "fake",
				"node.alpha.kubernetes.io/ttl": "0",
			},
			Labels: map[string]string{
				"beta.kubernetes.io/arch": arch, "beta.kubernetes.io/os": "linux",
				"kubernetes.io/arch": arch, "kubernetes.io/hostname": nodeName, "kubernetes.io/os": "linux",
				"kubernetes.io/role": "agent", "node-role.kubernetes.io/agent": "", "type": "kwok",
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: "10.0.0.0/24", PodCIDRs: []string{"10.0.0.0/24"}},
		Status: corev1.NodeStatus{
			// kwok serves this node's "kubelet" API on 127.0.0.1, so the
			// apiserver only ever dials loopback.
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"),
				corev1.ResourcePods: resource.MustParse("110"),
			},
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("31500m"), corev1.ResourceMemory: resource.MustParse("255Gi"),
				corev1.ResourcePods: resource.MustParse("110"),
			},
			NodeInfo: corev1.NodeSystemInfo{Architecture: arch, OperatingSystem: "linux"},
		},
	}
	_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node %s: %w", nodeName, err)
	}
	return nil
}

// writeOutputs writes the self-contained admin kubeconfig and the CA pair
// into Dir, each atomically, and links audit.log to the apiserver's audit log.
func (c *Cluster) writeOutputs() error {
	cfg, err := clientcmd.LoadFromFile(filepath.Join(c.workdir, "kubeconfig.yaml"))
	if err != nil {
		return fmt.Errorf("read kwokctl's kubeconfig: %w", err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return fmt.Errorf("embed the certificates in the kubeconfig: %w", err)
	}
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(c.KubeconfigPath(), b, 0o600); err != nil {
		return err
	}
	for name, mode := range map[string]os.FileMode{"ca.crt": 0o644, "ca.key": 0o600} {
		b, err := os.ReadFile(filepath.Join(c.workdir, "pki", name))
		if err != nil {
			return fmt.Errorf("copy the cluster CA: %w", err)
		}
		if err := writeFileAtomic(filepath.Join(c.o.Dir, name), b, mode); err != nil {
			return err
		}
	}
	link := filepath.Join(c.o.Dir, "audit.log")
	os.Remove(link)
	if err := os.Symlink(filepath.Join(c.workdir, "logs", "audit.log"), link); err != nil {
		return fmt.Errorf("link the audit log: %w", err)
	}
	return nil
}
