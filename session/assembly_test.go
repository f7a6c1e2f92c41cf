package session

import (
	"context"
	"net"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/hookback/hookback/builtin/webhooks"
)

// TestAssemblyShutdownReleasesListeners: a process that fails after
// Assemble bound the listeners, before serving (serve's leader election
// refused, say), calls only Shutdown, and the ports are free again.
func TestAssemblyShutdownReleasesListeners(t *testing.T) {
	a, err := Assemble(context.Background(), AssemblyOptions{Webhooks: []string{}, WebhookOptions: webhooks.DefaultOptions(), Watch: fake.NewClientset(),
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
