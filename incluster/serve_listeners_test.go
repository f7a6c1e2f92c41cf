package incluster

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/session"
)

// freePort is a loopback port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestServeReleasesListenersOnFailure fails a replica after it bound its
// listeners (the apiserver refuses the webhook configurations) and checks
// that both ports are free again once Serve returned.
func TestServeReleasesListenersOnFailure(t *testing.T) {
	port, health := freePort(t), freePort(t)
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	refused := errors.New("apply refused by the test")
	dyn.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, refused })
	cs := fake.NewClientset()
	cl := &session.Cluster{Client: cs, Watch: cs, Dynamic: dyn}
	cfg := ServeConfig{Namespace: "hb", Identity: "a", BindAddress: "127.0.0.1", Port: port,
		HealthAddress: "127.0.0.1:" + strconv.Itoa(health), Template: template(t), Webhooks: []string{"pod-name"}, WebhookOptions: webhooks.DefaultOptions(),
		LeaseDuration: 3 * time.Second, Log: slog.New(slog.DiscardHandler)}.withDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	err := serveOn(context.Background(), cfg, cl, time.Now())
	if !errors.Is(err, refused) {
		t.Fatalf("serveOn: %v, want the refused apply", err)
	}
	for _, p := range []int{port, health} {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d still held after Serve failed: %v", p, err)
			continue
		}
		ln.Close()
	}
	if !strings.Contains(err.Error(), "register") {
		t.Errorf("error %q does not say which step failed", err)
	}
}
