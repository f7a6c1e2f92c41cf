package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/cli"
	"github.com/hookback/hookback/internal/syncbuf"
	"github.com/hookback/hookback/session"
)

// shellEnv is a directory with `hookback` and kubectl on PATH, the files the
// help examples name, and settings that keep a started hookback off the
// ports, state and session of every other test.
type shellEnv struct {
	dir     string
	environ []string
}

func newShellEnv(t *testing.T) *shellEnv {
	t.Helper()
	dir, bin := t.TempDir(), t.TempDir()
	if err := os.Symlink(env.binary, filepath.Join(bin, "hookback")); err != nil {
		t.Fatal(err)
	}
	path := bin
	if kubectl, err := ctlKubectlPath(); err == nil {
		path += ":" + filepath.Dir(kubectl)
	}
	copyFile(t, repoPath("testdata", "webhook", "pod-name", "v1-create-banned-name.json"), filepath.Join(dir, "review.json"))
	copyFile(t, repoPath("webhook-url.yaml.tmpl"), filepath.Join(dir, "my-webhooks.yaml.tmpl"))
	// Your webhook configuration, for the drill examples.
	copyFile(t, repoPath("testdata", "drill", "pods-webhook.yaml"), filepath.Join(dir, "my-webhooks.yaml"))
	// Mutating webhooks e2e/crupstream serves, for lint --probe.
	copyFile(t, repoPath("testdata", "probe", "mutating-webhooks.yaml"), filepath.Join(dir, "my-mutating-webhooks.yaml"))
	// An operator project's config/, kustomize directories as kubebuilder
	// lays them out, for the examples that read one.
	if err := os.CopyFS(filepath.Join(dir, "config"), os.DirFS(repoPath("test", "e2e", "crmanager", "config"))); err != nil {
		t.Fatal(err)
	}
	// The Kubernetes documentation's ValidatingAdmissionPolicy, for the
	// --policy examples.
	if err := os.MkdirAll(filepath.Join(dir, "policies"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, repoPath("policy", "testdata", "basic", "policy.yaml"), filepath.Join(dir, "policies", "policy.yaml"))
	// A CRD with CEL rules and valid Widgets, for the validate examples.
	copyFile(t, repoPath("testdata", "crdvalidate", "widgets-crd.yaml"), filepath.Join(dir, "widgets-crd.yaml"))
	for _, f := range []string{"widget.yaml", "widget-v2.yaml", "widget-status.yaml"} {
		copyFile(t, repoPath("testdata", "crdvalidate", "examples", f), filepath.Join(dir, f))
	}
	// A Deployment, for the validate examples of native kinds.
	copyFile(t, repoPath("testdata", "crdvalidate", "native", "deployment.yaml"), filepath.Join(dir, "deployment.yaml"))
	// A suite for the built-ins, for the test examples.
	if err := os.CopyFS(filepath.Join(dir, "suite"), os.DirFS(repoPath("testdata", "suite"))); err != nil {
		t.Fatal(err)
	}
	// Cases that target the Widget CRD's rules.
	if err := os.CopyFS(filepath.Join(dir, "crd-cases"), os.DirFS(repoPath("testdata", "crdvalidate", "suite"))); err != nil {
		t.Fatal(err)
	}
	// A MutatingAdmissionPolicy on Widgets, and cases that name it and the
	// CRD.
	copyFile(t, repoPath("testdata", "crdvalidate", "suite-policy", "policy.yaml"), filepath.Join(dir, "widget-policy.yaml"))
	if err := os.MkdirAll(filepath.Join(dir, "widget-policy-cases"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, repoPath("testdata", "crdvalidate", "suite-policy", "cases.yaml"), filepath.Join(dir, "widget-policy-cases", "cases.yaml"))
	return &shellEnv{dir: dir, environ: append(os.Environ(),
		"PATH="+path+":"+os.Getenv("PATH"),
		"KUBECONFIG="+env.kubeconfig,
		"HOOKBACK_PORT="+strconv.Itoa(freePort(t)),
		"HOOKBACK_HEALTH_ADDRESS=127.0.0.1:"+strconv.Itoa(freePort(t)),
		"HOOKBACK_STATE_DIR="+t.TempDir(),
		"HOOKBACK_SESSION="+sessionFor(t),
	)}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// shell runs a command line with sh in the environment.
func (s *shellEnv) shell(ctx context.Context, line string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir, cmd.Env = s.dir, s.environ
	return cmd
}

// TestHelpExamplesRun runs every example of every command's --help, as
// written, against the cluster: a wrong example fails here.
func TestHelpExamplesRun(t *testing.T) {
	// The cluster examples start, show and stop a cluster of their own, in a
	// cache of their own, from hack/cluster's binaries (no download).
	clusterCache := t.TempDir()
	t.Cleanup(func() {
		cmd := exec.Command(env.binary, "cluster", "down", "--name", "example")
		cmd.Env = append(os.Environ(), "HOOKBACK_CACHE_DIR="+clusterCache)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("hookback cluster down --name example: %v\n%s", err, out)
		}
	})
	for cmdName, examples := range cli.Examples() {
		for _, ex := range examples {
			t.Run(strings.TrimSpace(cmdName+" "+ex.Command), func(t *testing.T) {
				if strings.Contains(ex.Command, "--all") && !env.local {
					t.Skip("removes every hookback session of the cluster: only run on the local control plane")
				}
				s := newShellEnv(t)
				if cmdName == "serve" || cmdName == "uninstall" {
					// The install's namespace is the test's; the serve
					// examples leave an install, which uninstall removes.
					ns := namespace(t)
					s.environ = append(s.environ, "HOOKBACK_INSTALL_NAMESPACE="+ns)
					t.Cleanup(func() { _, _, _ = hookback(t, env.kubeconfig, "uninstall", "--install-namespace", ns, "--wait", "5s") })
				}
				if cmdName == "cluster" {
					s.environ = append(s.environ, "HOOKBACK_CACHE_DIR="+clusterCache, "HOOKBACK_BINARIES="+clusterBinDir(t))
				}
				if cmdName == "lint" && strings.Contains(ex.Command, "--probe") {
					// Your server where the example expects it.
					up, _ := startCRUpstream(t)
					s.environ = append(s.environ, "HOOKBACK_UPSTREAM="+up)
				}
				if cmdName == "relay" {
					s.environ = append(s.environ, "HOOKBACK_RELAY_SECRET=e2e-example")
				}
				if strings.Contains(ex.Command, "--crd-from-cluster") {
					// The CRD the example reads from the cluster.
					installValidateCRD(t, dynamicClient(t), repoPath("testdata", "crdvalidate", "widgets-crd.yaml"))
				}
				if ex.Serves && strings.Contains(ex.Command, "--take-over") {
					givenBack := deployExampleOperator(t)
					runServing(t, s, ex.Command)
					givenBack(t)
					return
				}
				if ex.Serves {
					runServing(t, s, ex.Command)
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				out, err := s.shell(ctx, ex.Command).CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v\n%s", ex.Command, err, out)
				}
			})
		}
	}
}

// runServing starts a serving example, waits for its ready banner, and
// stops it as Ctrl-C would: it must exit 0.
func runServing(t *testing.T, s *shellEnv, line string) {
	t.Helper()
	var out, errOut syncbuf.Buffer
	cmd := s.shell(context.Background(), "exec "+line)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	eventually(t, "the ready banner of "+line, func(context.Context) (bool, error) {
		select {
		case err := <-done:
			t.Fatalf("%s exited before ready: %v\nstdout:\n%s\nstderr:\n%s", line, err, out.String(), errOut.String())
		default:
		}
		return strings.Contains(out.String(), "hookback is ready"), nil
	})
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s after SIGTERM: %v\nstderr:\n%s", line, err, errOut.String())
		}
	case <-time.After(deadline):
		t.Fatalf("%s did not stop within %s", line, deadline)
	}
}

// TestFirstRunBannerCommandsWork starts hookback as a first-time user would
// and runs the commands its ready banner suggests, from another "terminal"
// (an environment without KUBECONFIG), exactly as printed.
func TestFirstRunBannerCommandsWork(t *testing.T) {
	kubectl, err := ctlKubectlPath()
	if err != nil {
		t.Skip("no kubectl: ", err)
	}
	p := startEnv(t, append(os.Environ(), "KUBECONFIG="+env.kubeconfig, "HOOKBACK_KUBECTL="+kubectl),
		"--webhooks", "pod-name,pod-sidecar,pod-eviction", "--controllers", "none")
	p.ready(t)
	t.Cleanup(func() {
		_ = env.client.CoreV1().Namespaces().Delete(context.Background(), session.TryNamespace, metav1.DeleteOptions{})
	})
	// /readyz turns ready just before the banner is printed.
	eventually(t, "the whole ready banner", func(context.Context) (bool, error) {
		return strings.Contains(p.stdout.String(), "Stop with Ctrl-C"), nil
	})
	banner := p.stdout.String()
	var cmds []string
	for _, line := range strings.Split(banner, "\n") {
		if l := strings.TrimSpace(line); strings.Contains(l, kubectl) && !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	wants := []string{"namespace/" + session.TryNamespace, `denied the request: pod name contains "offensive"`, "xxl-agent", "Evicting"}
	if len(cmds) != len(wants) {
		t.Fatalf("banner suggests %d commands, want %d:\n%s", len(cmds), len(wants), banner)
	}
	for i, line := range cmds {
		cmd := exec.Command("sh", "-c", line)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Env = withoutVar(os.Environ(), "KUBECONFIG")
		err := cmd.Run()
		if strings.Contains(wants[i], "denied") {
			// The denied pod is the point: kubectl exits non-zero.
			err = nil
		}
		if err != nil || !strings.Contains(out.String(), wants[i]) {
			t.Errorf("banner command %q: %v, output lacks %q:\n%s", line, err, wants[i], out.String())
		}
	}
}

func withoutVar(environ []string, name string) []string {
	var out []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestEmbeddedWebhook runs examples/custom-webhook, a Go program that
// embeds hookback with a webhook of its own, through the real apiserver.
func TestEmbeddedWebhook(t *testing.T) {
	ns := namespace(t)
	p := startBinary(t, env.exampleBinary, append(os.Environ(), "KUBECONFIG="+env.kubeconfig), "--webhooks", "none", "--controllers", "none")
	p.ready(t)
	ctx := context.Background()
	_, err := whCreatePodImage(ctx, ns, "unpinned", "registry.example/app:latest")
	if err == nil || !strings.Contains(err.Error(), `container "app" uses image "registry.example/app:latest": pin a tag or digest other than latest`) {
		t.Fatalf("unpinned image: err = %v, want the example's denial", err)
	}
	if _, err := whCreatePodImage(ctx, ns, "pinned", "registry.example/app:1.2.3"); err != nil {
		t.Fatalf("pinned image denied: %v", err)
	}
	p.whWaitLogLine(t, "msg=admission", "webhook=pinned-images", "namespace="+ns, "name=pinned ", "decision=allowed")
}
