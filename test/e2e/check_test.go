package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

func TestCheckAsAdmin(t *testing.T) {
	out, errOut, code := hookback(t, env.kubeconfig, "check")
	if code != 0 {
		t.Fatalf("hookback check exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"Version:", "User:", "create mutatingwebhookconfigurations.admissionregistration.k8s.io", "permissions granted"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestCheckWithoutPermissions(t *testing.T) {
	kc := tokenKubeconfig(t, namespace(t), "nobody")
	out, errOut, code := hookback(t, kc, "check")
	if code != 2 {
		t.Fatalf("exit = %d, want 2\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "NO") {
		t.Errorf("table shows no denied permission:\n%s", out)
	}
	summary := strings.TrimSpace(errOut)
	for _, want := range []string{"missing permissions", "system:serviceaccount:", "create mutatingwebhookconfigurations.admissionregistration.k8s.io", "update leases.coordination.k8s.io"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q: %s", want, summary)
		}
	}
	if n := strings.Count(summary, "\n"); n != 0 {
		t.Errorf("summary is %d lines, want one: %s", n+1, summary)
	}
}

func TestCheckUnreachable(t *testing.T) {
	raw, err := clientcmd.LoadFromFile(env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range raw.Clusters {
		c.Server = "https://127.0.0.1:" + itoa(freePort(t))
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*raw, kc); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := hookback(t, kc, "check")
	if code == 0 {
		t.Fatal("check succeeded against a closed port")
	}
	line := strings.TrimSpace(errOut)
	if strings.Count(line, "\n") != 0 || !strings.Contains(line, "connection refused") || !strings.Contains(line, "127.0.0.1") {
		t.Errorf("want one line naming the address and the refusal, got:\n%s", line)
	}
}

// tokenKubeconfig writes a kubeconfig for a new ServiceAccount that has no
// RBAC at all, authenticating with a token from the TokenRequest API.
func tokenKubeconfig(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	sa, err := env.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := env.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := clientcmd.LoadFromFile(env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cur := raw.Contexts[raw.CurrentContext]
	raw.AuthInfos = map[string]*clientcmdapi.AuthInfo{"nobody": {Token: tr.Status.Token}}
	raw.Contexts = map[string]*clientcmdapi.Context{"nobody": {Cluster: cur.Cluster, AuthInfo: "nobody"}}
	raw.CurrentContext = "nobody"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*raw, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
