package e2e

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/hookback/hookback/tunnel"
)

// TestInClusterImage is TestInClusterTwoReplicas with each replica run from
// the image named by HOOKBACK_E2E_IMAGE, by podman, the way the rendered
// Deployment runs it: the image's entrypoint, the Deployment's arguments,
// user, read-only root with its emptyDir on a tmpfs, dropped capabilities,
// no privilege escalation and env (POD_NAME, POD_NAMESPACE), and the
// ServiceAccount's token, CA and namespace where the kubelet mounts them.
// No kubeconfig: the binary finds the apiserver with rest.InClusterConfig,
// through KUBERNETES_SERVICE_HOST=kubernetes.default.svc (a name the local
// apiserver's certificate carries), which the container's /etc/hosts
// points at the forwarder on its veth's host end.
//
// The image comes from `make image` (on a machine that reaches no registry,
// after hack/image-bases-offline); docs/in-cluster.md.
func TestInClusterImage(t *testing.T) {
	image := os.Getenv("HOOKBACK_E2E_IMAGE")
	if image == "" {
		t.Skip("skipped: set HOOKBACK_E2E_IMAGE to a hookback image in podman's storage (make image CONTAINER_ENGINE=podman IMAGE=...)")
	}
	requireLocal(t, "needs kube-apiserver's --enable-aggregator-routing=true to call replicas in test-made network namespaces (on kind: TestInClusterDeployment)")
	requireNetns(t)
	engine := imageEngine(t, image)
	// make image stamps the version: a "dev" build was not made by it.
	out, err := exec.Command(engine, "run", "--rm", image, "--version").CombinedOutput()
	if v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "hookback version "); err != nil || !ok || v == "" || v == "dev" {
		t.Errorf("%s run %s --version: %v %q, want hookback version <git describe>", engine, image, err, out)
	}
	in := installForTest(t)
	in.image, in.engine = image, engine
	in.twoReplicas(t)
}

// imageEngine is the container engine that has image and can run a
// container in a network namespace the test made; it skips the test when
// there is none.
func imageEngine(t *testing.T, image string) string {
	t.Helper()
	engine, why := lookupEngine(t, image)
	if why != "" {
		t.Skip("skipped: " + why)
	}
	return engine
}

// lookupEngine is podman (or HOOKBACK_E2E_ENGINE), whose --network ns:PATH
// runs a container in a test-made network namespace (docker cannot), or
// why there is none. It fails the test when the engine lacks image or the
// image's user is root, which the pods' runAsNonRoot refuses.
func lookupEngine(t *testing.T, image string) (path, why string) {
	t.Helper()
	engine := os.Getenv("HOOKBACK_E2E_ENGINE")
	if engine == "" {
		engine = "podman"
	}
	if filepath.Base(engine) == "docker" {
		return "", "docker cannot run a container in a network namespace the test made; use podman (HOOKBACK_E2E_ENGINE)"
	}
	path, err := exec.LookPath(engine)
	if err != nil {
		return "", engine + " is not on PATH (HOOKBACK_E2E_ENGINE picks another podman)"
	}
	out, err := exec.Command(path, "image", "inspect", "--format", "{{.Config.User}}", image).CombinedOutput()
	if err != nil {
		t.Fatalf("image %s is not in %s's storage (make image CONTAINER_ENGINE=%s IMAGE=%s): %v\n%s", image, engine, engine, image, err, out)
	}
	user := strings.TrimSpace(string(out))
	if uid, _, _ := strings.Cut(user, ":"); uid == "" || uid == "0" || uid == "root" {
		t.Fatalf("image %s runs as user %q: the pods' runAsNonRoot needs a non-root USER", image, user)
	}
	return path, ""
}

// runContainer runs image in network namespace n with podman run options
// opts and arguments cmd; the engine's client is the process, its output
// the log, and signals go to the container.
func runContainer(t *testing.T, engine, image string, n *netns, name string, opts, cmd []string) *nsProc {
	t.Helper()
	args := append([]string{"run", "--rm", "--name", name, "--network", "ns:/run/netns/" + n.name}, opts...)
	args = append(append(args, image), cmd...)
	// Registered before startProc's cleanup, so it runs after it: whatever
	// the engine's client did, the container goes.
	t.Cleanup(func() { _ = exec.Command(engine, "rm", "--force", "--time", "5", name).Run() })
	signal := func(sig syscall.Signal) {
		_ = exec.Command(engine, "kill", "--signal", strconv.Itoa(int(sig)), name).Run()
	}
	return startProc(t, name, "from image "+image, exec.Command(engine, args...), signal)
}

// startContainer runs replica r from in.image in r's network namespace,
// with what the rendered Deployment gives its container. Each start is a
// new container, as each pod of a rollout is.
func (in *inClusterInstall) startContainer(t *testing.T, r *replica) {
	t.Helper()
	if r.saDir == "" {
		r.saDir = serviceAccountDir(t, in.ns, in.token)
		u, err := url.Parse(forwardToAPIServer(t, r.ns.hostIP))
		if err != nil {
			t.Fatal(err)
		}
		r.apiserverPort = u.Port()
	}
	r.starts++
	name := fmt.Sprintf("hookback-e2e-%s-%d-%d", r.id, os.Getpid(), r.starts)
	const template = "/etc/hookback/webhooks.yaml.tmpl"
	fields := map[string]string{"metadata.name": r.id, "metadata.namespace": in.ns}
	pod, cmd := podmanArgs(t, renderedDeployment(t, in.rendered).Spec.Template.Spec, func(from *corev1.EnvVarSource) string {
		if from.FieldRef == nil {
			return ""
		}
		return fields[from.FieldRef.FieldPath]
	})
	opts := append([]string{"--add-host", "kubernetes.default.svc:" + r.ns.hostIP,
		"-e", "KUBERNETES_SERVICE_HOST=kubernetes.default.svc", "-e", "KUBERNETES_SERVICE_PORT=" + r.apiserverPort,
		"-v", r.saDir + ":/var/run/secrets/kubernetes.io/serviceaccount:ro",
		"-v", in.template + ":" + template + ":ro"}, pod...)
	// The test's template (failurePolicy Fail, its namespace) and a Lease
	// short enough for a takeover within the test.
	cmd = append(cmd, "--template", template, "--lease-duration", inClusterLease.String(), "--shutdown-delay", "2s")
	r.proc = runContainer(t, in.engine, in.image, r.ns, name, opts, cmd)
}

// renderedDeployment is the Deployment in render --in-cluster's output.
func renderedDeployment(t *testing.T, rendered string) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	if err := yaml.Unmarshal([]byte(documents(rendered, "Deployment")), &d); err != nil {
		t.Fatalf("the rendered Deployment: %v", err)
	}
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("the rendered Deployment has %d containers, want 1", n)
	}
	return &d
}

// podmanArgs turns a pod spec's settings for its one container into
// podman run options (user, read-only root, emptyDirs as tmpfs,
// capabilities, privilege escalation, env, valueFrom resolved by from) and
// the container's arguments. A setting it does not know fails the test, so
// the container never runs with less than the pod asks for; ports, probes
// and resources are the test's to check.
func podmanArgs(t *testing.T, spec corev1.PodSpec, from func(*corev1.EnvVarSource) string) (opts, cmd []string) {
	t.Helper()
	if len(spec.Containers) != 1 || len(spec.InitContainers) > 0 {
		t.Fatalf("the pod has %d containers and %d init containers, want one container", len(spec.Containers), len(spec.InitContainers))
	}
	c := spec.Containers[0]
	psc, sc := spec.SecurityContext, c.SecurityContext
	if psc == nil || sc == nil {
		t.Fatal("the pod sets no securityContext")
	}
	uid, gid := ptr.Deref(sc.RunAsUser, ptr.Deref(psc.RunAsUser, 0)), ptr.Deref(sc.RunAsGroup, ptr.Deref(psc.RunAsGroup, 0))
	if uid == 0 || !ptr.Deref(psc.RunAsNonRoot, false) {
		t.Fatalf("the pod runs as uid %d (runAsNonRoot %v)", uid, psc.RunAsNonRoot)
	}
	opts = append(opts, "--user", fmt.Sprintf("%d:%d", uid, gid))
	if ptr.Deref(sc.ReadOnlyRootFilesystem, false) {
		opts = append(opts, "--read-only")
	}
	if !ptr.Deref(sc.AllowPrivilegeEscalation, true) {
		opts = append(opts, "--security-opt", "no-new-privileges")
	}
	if sc.Capabilities != nil {
		for _, c := range sc.Capabilities.Drop {
			opts = append(opts, "--cap-drop", string(c))
		}
		for _, c := range sc.Capabilities.Add {
			opts = append(opts, "--cap-add", string(c))
		}
	}
	emptyDirs := map[string]bool{}
	for _, v := range spec.Volumes {
		if v.EmptyDir == nil {
			t.Fatalf("the pod's volume %s is not an emptyDir: podmanArgs cannot give it", v.Name)
		}
		emptyDirs[v.Name] = true
	}
	for _, m := range c.VolumeMounts {
		if !emptyDirs[m.Name] {
			t.Fatalf("the container mounts %s, which is no emptyDir of the pod", m.Name)
		}
		opts = append(opts, "--tmpfs", m.MountPath)
	}
	for _, e := range c.Env {
		value := e.Value
		if e.ValueFrom != nil {
			if value = from(e.ValueFrom); value == "" {
				t.Fatalf("the container's env %s comes from %+v, which the test does not give", e.Name, e.ValueFrom)
			}
		}
		opts = append(opts, "-e", e.Name+"="+value)
	}
	if len(c.Command) > 0 {
		opts = append(opts, "--entrypoint", strings.Join(c.Command, " "))
	}
	return opts, c.Args
}

// serviceAccountDir writes what the kubelet mounts at
// /var/run/secrets/kubernetes.io/serviceaccount: token, ca.crt (the CA of
// the apiserver's serving certificate) and namespace, readable by the
// image's non-root user.
func serviceAccountDir(t *testing.T, ns, token string) string {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ca := rc.CAData
	if len(ca) == 0 && rc.CAFile != "" {
		if ca, err = os.ReadFile(rc.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"token": []byte(token), "ca.crt": ca, "namespace": []byte(ns)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// relayContainer runs the relay from image in n as the relay pod, which the
// session deployed, says: its container's arguments, user, securityContext
// and the secret of its Secret in the env.
func relayContainer(t *testing.T, engine, image string, n *netns, pod *corev1.Pod, secret string, start int) *nsProc {
	t.Helper()
	opts, cmd := podmanArgs(t, pod.Spec, func(from *corev1.EnvVarSource) string {
		if ref := from.SecretKeyRef; ref != nil && ref.Key == tunnel.SecretKey {
			return secret
		}
		return ""
	})
	return runContainer(t, engine, image, n, fmt.Sprintf("hookback-e2e-relay-%d-%d", os.Getpid(), start), opts, cmd)
}
