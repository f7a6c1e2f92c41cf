package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// env is what every test shares, set up once by TestMain.
var env struct {
	repo       string
	kubeconfig string
	// binary is hookback as it ships; markBinary is hookback with the e2e
	// mark webhook, embedded the way any Go program would (e2e/markhook);
	// exampleBinary is examples/custom-webhook.
	// crBinary is e2e/crupstream, controller-runtime's webhook server;
	// crManager is e2e/crmanager, a manager with a two-version CRD.
	binary, markBinary, exampleBinary, crBinary, crManager string
	client                                                 kubernetes.Interface
	// local is true when the tests run on hack/cluster's control plane.
	local bool
}

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		return 0, err
	}
	env.repo = repo
	env.kubeconfig = os.Getenv("KUBECONFIG")
	if env.kubeconfig == "" {
		env.local = true
		out, err := script(repo, "hack/cluster/up")
		if err != nil {
			return 0, fmt.Errorf("hack/cluster/up: %w", err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		env.kubeconfig = lines[len(lines)-1]
		if os.Getenv("HOOKBACK_KEEP_CLUSTER") == "" {
			defer script(repo, "hack/cluster/down") //nolint:errcheck // best effort at exit
		}
	}
	rc, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		return 0, fmt.Errorf("load %s: %w", env.kubeconfig, err)
	}
	if env.client, err = kubernetes.NewForConfig(rc); err != nil {
		return 0, err
	}
	bin, err := os.MkdirTemp("", "hookback-e2e-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(bin)
	env.binary = filepath.Join(bin, "hookback")
	env.markBinary = filepath.Join(bin, "hookback-markhook")
	env.exampleBinary = filepath.Join(bin, "custom-webhook")
	env.crBinary = filepath.Join(bin, "crupstream")
	env.crManager = filepath.Join(bin, "crmanager")
	for _, b := range []struct{ dir, pkg, out string }{
		{repo, ".", env.binary},
		{filepath.Join(repo, "test", "e2e"), "./markhook", env.markBinary},
		{filepath.Join(repo, "examples", "custom-webhook"), ".", env.exampleBinary},
		{filepath.Join(repo, "test", "e2e", "crupstream"), ".", env.crBinary},
		{filepath.Join(repo, "test", "e2e", "crmanager"), ".", env.crManager},
	} {
		build := exec.Command("go", "build", "-o", b.out, b.pkg)
		build.Dir = b.dir
		if out, err := build.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("build %s in %s: %w\n%s", b.pkg, b.dir, err, out)
		}
	}
	release, err := keepParamInformers(context.Background(), env.client)
	if err != nil {
		return 0, err
	}
	code := m.Run()
	release()
	if code != 0 && env.local {
		printClusterLogs(repo)
	}
	return code, nil
}

// printClusterLogs prints the end of the local control plane's component
// logs, which hack/cluster/down deletes: what a failed wait on the scheduler
// or kwok needs to be understood after CI.
func printClusterLogs(repo string) {
	logs, _ := filepath.Glob(filepath.Join(repo, ".cache", "cluster", "kwok", "clusters", "*", "logs", "*.log"))
	for _, path := range logs {
		if strings.HasSuffix(path, "etcd.log") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		fmt.Fprintf(os.Stderr, "--- last lines of %s:\n%s\n", filepath.Base(path), strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
}

// script runs a repo script, streaming its stderr, and returns its stdout.
func script(repo, path string) (string, error) {
	cmd := exec.Command(filepath.Join(repo, path))
	cmd.Dir = repo
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	return out.String(), err
}

// Why a test needs hack/cluster's control plane; each is the skip reason a
// test gives against any other cluster ($KUBECONFIG set).
const (
	// whyKwokRuns: the test waits for pods of an image no registry serves
	// (registry.example/app:e2e) to be Running, which only kwok's fake nodes
	// report; a real kubelet would leave them in ErrImagePull.
	whyKwokRuns = "needs kwok's fake nodes to run pods of the unpullable image registry.example/app:e2e"
	// whyKwokHeartbeats: the test waits for kwok's frequent nodes/status
	// heartbeats and rewrites a node's CPU, which no real node should see.
	whyKwokHeartbeats = "needs a kwok fake node's heartbeats and oversells its CPU"
)

// requireLocal skips the test unless it runs on hack/cluster's control
// plane, saying why it needs it; on that control plane it always runs.
func requireLocal(t *testing.T, why string) {
	t.Helper()
	if !env.local {
		t.Skipf("skipped against $KUBECONFIG's cluster: %s; run it on the local control plane (KUBECONFIG= make e2e)", why)
	}
}
