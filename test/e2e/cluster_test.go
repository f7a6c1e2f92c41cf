package e2e

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hookback/hookback/localcluster"
	"github.com/hookback/hookback/localcluster/releasetest"
)

// The tests of `hookback cluster` start clusters of their own, beside the
// suite's, from release artifacts served on loopback by releasetest: the
// envtest index and archive, dl.k8s.io's layout and kwok's GitHub release,
// packed from hack/cluster's source-built binaries (no release can be
// downloaded here).

// releaseServer serves the release artifacts packed from hack/cluster's build.
func releaseServer(t *testing.T, tamper bool) *releasetest.Server {
	t.Helper()
	s, err := releasetest.Start(releasetest.Options{
		BinDir: clusterBinDir(t), KubeVersion: localcluster.DefaultKubeVersion, KwokVersion: localcluster.DefaultKwokVersion,
		OS: runtime.GOOS, Arch: runtime.GOARCH, TamperEnvtest: tamper, WorkDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testCluster is one cluster a test starts, with its own cache and state.
type testCluster struct {
	name, cache, dir string
	sources          []string
}

func newTestCluster(t *testing.T, name string, s *releasetest.Server) *testCluster {
	c := &testCluster{name: name, cache: t.TempDir(), dir: filepath.Join(t.TempDir(), "state")}
	if s != nil {
		c.sources = []string{"--index", s.IndexURL, "--kwok-releases", s.KwokReleasesURL, "--kube-release-url", s.KubeReleaseURL}
	}
	t.Cleanup(func() {
		if _, errOut, code := c.run(t, "down"); code != 0 {
			t.Errorf("cleanup: hookback cluster down: exit %d\n%s", code, errOut)
		}
		if pids := processesNaming(c.dir); len(pids) > 0 {
			t.Errorf("processes of %s still running after down: %v", c.dir, pids)
		}
	})
	return c
}

func (c *testCluster) workdir() string { return filepath.Join(c.dir, "kwok", "clusters", c.name) }

// cmd is `hookback cluster SUB` on this cluster; up also gets the sources.
func (c *testCluster) cmd(ctx context.Context, sub string, extra ...string) *exec.Cmd {
	args := []string{"cluster", sub, "--name", c.name, "--cluster-dir", c.dir, "--cache-dir", c.cache}
	if sub == "up" {
		args = append(args, c.sources...)
	}
	cmd := exec.CommandContext(ctx, env.binary, append(args, extra...)...)
	cmd.Env = withoutVar(withoutVar(os.Environ(), "KUBEBUILDER_ASSETS"), "HOOKBACK_CACHE_DIR")
	return cmd
}

func (c *testCluster) run(t *testing.T, sub string, extra ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := c.cmd(ctx, sub, extra...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("hookback cluster %s: %v", sub, err)
	}
	return o.String(), e.String(), 0
}

func (c *testCluster) up(t *testing.T) (kubeconfig, stderr string) {
	t.Helper()
	out, errOut, code := c.run(t, "up")
	if code != 0 {
		t.Fatalf("hookback cluster up: exit %d\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got, want := lines[len(lines)-1], filepath.Join(c.dir, "kubeconfig"); got != want {
		t.Fatalf("up printed %q last, want the kubeconfig %s", got, want)
	}
	return lines[len(lines)-1], errOut
}

// processesNaming lists the processes whose command line names dir/.
func processesNaming(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue // exited; a zombie of pid 1 here
		}
		if err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), dir+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestClusterFromReleaseArchives: a first up from an empty cache downloads
// and verifies every artifact once and makes a cluster where a Deployment's
// pod becomes Running; a second up reuses both; status notices a killed
// apiserver; down leaves no process and removes the state directory.
func TestClusterFromReleaseArchives(t *testing.T) {
	s := releaseServer(t, false)
	c := newTestCluster(t, "e2e-releases", s)
	kubeconfig, errOut := c.up(t)
	if n := strings.Count(errOut, "downloaded and verified"); n != 3 {
		t.Errorf("up said %d times that it downloaded and verified; want 3 (envtest, kwok, kube):\n%s", n, errOut)
	}
	cs := clientFor(t, kubeconfig)
	v, err := cs.Discovery().ServerVersion()
	if err != nil || v.GitVersion != localcluster.DefaultKubeVersion {
		t.Fatalf("server version %v, %v; want %s", v, err, localcluster.DefaultKubeVersion)
	}
	runDeployment(t, cs)

	gets := s.ArtifactGets()
	if _, errOut := c.up(t); !strings.Contains(errOut, "already running") {
		t.Errorf("second up did not reuse the cluster:\n%s", errOut)
	}
	if s.ArtifactGets() != gets {
		t.Errorf("second up downloaded again: %d artifacts, then %d", gets, s.ArtifactGets())
	}
	if out, errOut, code := c.run(t, "status"); code != 0 || !strings.Contains(out, "/readyz ok") {
		t.Fatalf("status of a healthy cluster: exit %d\n%s%s", code, out, errOut)
	}

	pid, err := os.ReadFile(filepath.Join(c.workdir(), "pids", "kube-apiserver.pid"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err := syscall.Kill(p, syscall.SIGKILL); err != nil {
		t.Fatalf("kill kube-apiserver %d: %v", p, err)
	}
	eventually(t, "status to notice the dead apiserver", func(context.Context) (bool, error) {
		out, errOut, code := c.run(t, "status")
		return code == 1 && strings.Contains(out, "kube-apiserver           NOT RUNNING") && strings.Contains(errOut, "not healthy"), nil
	})

	if _, errOut, code := c.run(t, "down"); code != 0 {
		t.Fatalf("down: exit %d\n%s", code, errOut)
	}
	if pids := processesNaming(c.dir); len(pids) > 0 {
		t.Errorf("processes still running after down: %v", pids)
	}
	if _, err := os.Stat(c.dir); !os.IsNotExist(err) {
		t.Errorf("state directory %s after down: %v; want it removed (up made it)", c.dir, err)
	}
	if _, err := os.Stat(localcluster.ReleaseDir(c.cache, "envtest", localcluster.DefaultKubeVersion)); err != nil {
		t.Errorf("down removed the cached binaries: %v", err)
	}
}

// runDeployment proves controller-manager, scheduler and kwok all run: a
// Deployment's pod is scheduled onto the fake node and becomes Running.
func runDeployment(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	labels := map[string]string{"app": "e2e-cluster"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-cluster", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:e2e"}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Deployment's pod Running", func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=e2e-cluster"})
		if err != nil {
			return false, err
		}
		return len(pods.Items) == 1 && pods.Items[0].Status.Phase == corev1.PodRunning, nil
	})
}

// TestClusterTwoUpsAtOnce: two up of one cluster at once, from an empty
// cache, make one download of each artifact and one cluster.
func TestClusterTwoUpsAtOnce(t *testing.T) {
	s := releaseServer(t, false)
	c := newTestCluster(t, "e2e-twice", s)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	outs, errs := make([]bytes.Buffer, 2), make([]bytes.Buffer, 2)
	codes := make([]error, 2)
	for i := range 2 {
		cmd := c.cmd(ctx, "up")
		cmd.Stdout, cmd.Stderr = &outs[i], &errs[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = cmd.Run()
		}()
	}
	wg.Wait()
	for i := range 2 {
		if codes[i] != nil {
			t.Fatalf("up %d: %v\n%s", i, codes[i], errs[i].String())
		}
	}
	if outs[0].String() != outs[1].String() {
		t.Errorf("the two ups printed different kubeconfigs: %q and %q", outs[0].String(), outs[1].String())
	}
	want := 5 // the envtest archive, kwok, kwokctl, kube-controller-manager, kube-scheduler
	if runtime.GOOS != "linux" {
		want = 3
	}
	if got := s.ArtifactGets(); got != want {
		t.Errorf("%d artifact downloads, want %d (each once)", got, want)
	}
	if !strings.Contains(errs[0].String()+errs[1].String(), "already running; reusing it") {
		t.Errorf("neither up reused the other's cluster:\n%s\n%s", errs[0].String(), errs[1].String())
	}
	apiservers := 0
	for _, pid := range processesNaming(c.workdir()) {
		if b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline")); strings.Contains(string(b), "kube-apiserver") {
			apiservers++
		}
	}
	if apiservers != 1 {
		t.Errorf("%d kube-apiserver processes for %s, want 1", apiservers, c.workdir())
	}
}

// TestClusterTamperedArchive: an archive whose sha512 is not the index's is
// refused, naming both hashes; nothing is installed, started or built.
func TestClusterTamperedArchive(t *testing.T) {
	s := releaseServer(t, true)
	c := newTestCluster(t, "e2e-tampered", s)
	_, errOut, code := c.run(t, "up")
	if code == 0 {
		t.Fatal("up with a tampered archive succeeded")
	}
	for _, want := range []string{"checksum mismatch", "expected sha512 ", ", got ", "nothing was installed"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("up's error does not say %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "from source") {
		t.Errorf("a tampered archive made up fall back to building:\n%s", errOut)
	}
	entries, _ := os.ReadDir(filepath.Join(c.cache, "cluster-release"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "envtest-") && !strings.HasSuffix(e.Name(), ".lock") {
			t.Errorf("cache holds %s after the refusal", e.Name())
		}
	}
	if pids := processesNaming(c.dir); len(pids) > 0 {
		t.Errorf("processes started: %v", pids)
	}
}

// TestClusterUnreachableIndexFallsBack: with the index unreachable, up says
// so in one line and builds from source what the cache lacks, with hookback's
// embedded build module and the go command (here only kwokctl is missing from
// the cache's source build, which links in about a minute from Go's build
// cache; the rest is hack/cluster's build).
func TestClusterUnreachableIndexFallsBack(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	c := newTestCluster(t, "e2e-fallback", nil)
	c.sources = []string{"--index", closed + "/envtest-releases.yaml", "--kwok-releases", closed, "--kube-release-url", closed}
	src := localcluster.SourceDir(c.cache, localcluster.DefaultKubeVersion, localcluster.DefaultKwokVersion)
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	bins := clusterBinDir(t)
	for _, n := range []string{"etcd", "kube-apiserver", "kubectl", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if err := os.Symlink(filepath.Join(bins, n), filepath.Join(src, n)); err != nil {
			t.Fatal(err)
		}
	}
	_, errOut := c.up(t)
	if n := strings.Count(errOut, "cannot be downloaded"); n != 1 || !strings.Contains(errOut, "building them from source instead") {
		t.Errorf("up said %d times that the index cannot be reached; want one line saying it builds from source:\n%s", n, errOut)
	}
	if !strings.Contains(errOut, "built kwokctl into "+src) || !strings.Contains(errOut, "built from source (release binaries unreachable)") {
		t.Errorf("up does not say it built kwokctl from source:\n%s", errOut)
	}
	if st, err := os.Lstat(filepath.Join(src, "kwokctl")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("kwokctl in %s: %v, want the built binary", src, err)
	}
}
