package session

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/registration"
)

// TestRender: render prints what start would apply, for the advertised
// address, with the caBundle of the certificate start would serve, and
// refuses a template that registers a path nothing serves.
func TestRender(t *testing.T) {
	tests := []struct {
		name     string
		template string
		want     []string
		wantErr  error
	}{{
		name:     "the test template, for this session and address",
		template: testTemplate,
		want: []string{"name: test-unit", "url: https://127.0.0.1:8443/test", "caBundle: ",
			registration.LabelSession + ": unit", "hookback.dev/lease: default/hookback-unit"},
	}, {
		name:     "a path no webhook serves",
		template: strings.Replace(testTemplate, "/test", "/not-served", 1),
		wantErr:  registration.ErrTemplate,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := startConfig(t, nil)
			cfg.Port = 8443
			cfg.Template = registration.Template{Default: []byte(tt.template)}
			out, err := render(context.Background(), cfg)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Render = %v, want %v", err, tt.wantErr)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("rendered YAML does not have %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestCleanupUnreachable: cleanup against an apiserver that does not
// answer fails, saying which server it could not reach.
func TestCleanupUnreachable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Cleanup(ctx, CleanupConfig{Kubeconfig: kubeconfig.Options{Path: path}, LeaseNamespace: "default"})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("Cleanup = %v, want an error naming the server", err)
	}
}

// TestCleanupShared: the shared objects of a part are cleaned up unless
// another live session runs that part; a dead session's parts do not count.
func TestCleanupShared(t *testing.T) {
	lease := func(session string, renewed time.Time, parts string) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: registration.LeaseName(session), Namespace: "default",
				Labels:      map[string]string{registration.LabelManagedBy: registration.ManagedByValue, registration.LabelSession: session},
				Annotations: map[string]string{registration.AnnotationParts: parts}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("h/1"), RenewTime: &metav1.MicroTime{Time: renewed}, LeaseDurationSeconds: ptr.To[int32](30)},
		}
	}
	tests := []struct {
		name   string
		leases []runtime.Object
		// What must be cleaned up: node CPU restored, exec RBAC removed.
		restoresNodes, removesRBAC bool
	}{
		{name: "no other session: every part cleaned up", restoresNodes: true, removesRBAC: true},
		{name: "a live session runs node-status: nodes left alone",
			leases:        []runtime.Object{lease("other", time.Now(), webhooks.NameNodeStatus)},
			restoresNodes: false, removesRBAC: true},
		{name: "a dead session ran both: every part cleaned up",
			leases:        []runtime.Object{lease("dead", time.Now().Add(-time.Hour), webhooks.NameNodeStatus+","+controllers.ExecRBACName)},
			restoresNodes: true, removesRBAC: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &journal{}
			cs, dyn := newFakeClients(t, j, tt.leases...)
			cs.PrependReactor("list", "rolebindings", func(k8stesting.Action) (bool, runtime.Object, error) {
				j.add("list rolebindings")
				return false, nil, nil
			})
			err := CleanupShared(context.Background(), cs, dyn, "default", "", time.Now, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			if got := j.index("list nodes") >= 0; got != tt.restoresNodes {
				t.Errorf("restored nodes = %v, want %v: %q", got, tt.restoresNodes, j.all())
			}
			if got := j.index("list rolebindings") >= 0; got != tt.removesRBAC {
				t.Errorf("removed exec RBAC = %v, want %v: %q", got, tt.removesRBAC, j.all())
			}
		})
	}
}

// TestAssembly: the in-cluster serve mode gets the same built-ins start
// assembles, its listeners are bound, its informers sync, and Events its
// parts record reach the cluster with their action.
func TestAssembly(t *testing.T) {
	cs := fake.NewClientset()
	c, err := Assemble(context.Background(), AssemblyOptions{Webhooks: []string{webhooks.NamePodEviction, webhooks.NameNodeStatus},
		Controllers: []string{controllers.ExecRBACName}, WebhookOptions: webhooks.DefaultOptions(), Watch: cs,
		Address: "127.0.0.1:0", HealthAddress: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	if got := c.Server.Paths(); len(got) != 2 {
		t.Errorf("served paths = %v, want pod-eviction's and node-status'", got)
	}
	if got := c.parts.names(); strings.Join(got, ",") != webhooks.NamePodEviction+","+webhooks.NameNodeStatus+","+controllers.ExecRBACName &&
		strings.Join(got, ",") != webhooks.NameNodeStatus+","+webhooks.NamePodEviction+","+controllers.ExecRBACName {
		t.Errorf("parts = %v", got)
	}
	if n := len(c.Controllers()); n != 1 {
		t.Errorf("%d controllers, want 1", n)
	}
	if c.Inspector != nil {
		t.Error("serve has no inspector, yet one was assembled")
	}
	c.Start()
	waitFor(t, "the informers to sync", c.Synced)
	c.recorders.For("unit").Eventf(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "default"}},
		nil, "Normal", "Tested", "Test", "a note")
	waitFor(t, "the Event", func() bool {
		list, err := cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		return err == nil && len(list.Items) == 1 && list.Items[0].Action == "Test" && list.Items[0].Reason == "Tested"
	})
}
