package assembly

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	coordinationv1 "k8s.io/api/coordination/v1"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/builtin/webhooks"
)

// TestAssemblyShutdownReleasesListeners: a process that fails after
// Assemble bound the listeners, before serving (serve's leader election
// refused, say), calls only Shutdown, and the ports are free again.
func TestAssemblyShutdownReleasesListeners(t *testing.T) {
	a, err := Assemble(context.Background(), Options{Webhooks: []string{}, WebhookOptions: webhooks.DefaultOptions(), Watch: fake.NewClientset(),
		Address: "127.0.0.1:0", HealthAddress: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addrs := []string{a.Server.Addr().String(), a.Server.HealthAddr().String()}
	a.Shutdown()
	for _, addr := range addrs {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("%s still held after Shutdown: %v", addr, err)
			continue
		}
		ln.Close()
	}
}

// TestAssembly: the in-cluster serve mode gets the same built-ins start
// assembles, its listeners are bound, its informers sync, and Events its
// parts record reach the cluster with their action.
func TestAssembly(t *testing.T) {
	cs := fake.NewClientset()
	c, err := Assemble(context.Background(), Options{Webhooks: []string{webhooks.NamePodEviction, webhooks.NameNodeStatus},
		Controllers: []string{controllers.ExecRBACName}, WebhookOptions: webhooks.DefaultOptions(), Watch: cs,
		Address: "127.0.0.1:0", HealthAddress: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	if got := c.Server.Paths(); len(got) != 2 {
		t.Errorf("served paths = %v, want pod-eviction's and node-status'", got)
	}
	if got := c.Parts.Names(); strings.Join(got, ",") != webhooks.NamePodEviction+","+webhooks.NameNodeStatus+","+controllers.ExecRBACName &&
		strings.Join(got, ",") != webhooks.NameNodeStatus+","+webhooks.NamePodEviction+","+controllers.ExecRBACName {
		t.Errorf("parts = %v", got)
	}
	if n := len(c.Parts.Runnables()); n != 1 {
		t.Errorf("%d controllers, want 1", n)
	}
	if len(c.Served) != 2 {
		t.Errorf("%d webhooks served, want the two built-ins", len(c.Served))
	}
	c.Start()
	waitFor(t, "the informers to sync", c.Synced)
	c.Events().For("unit").Eventf(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "default"}},
		nil, "Normal", "Tested", "Test", "a note")
	waitFor(t, "the Event", func() bool {
		list, err := cs.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		return err == nil && len(list.Items) == 1 && list.Items[0].Action == "Test" && list.Items[0].Reason == "Tested"
	})
}

// waitFor polls cond until it holds, failing after 10s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waited 10s for %s", what)
	}
}
