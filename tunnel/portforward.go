package tunnel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// PortForward reaches a pod's port through the apiserver, as `kubectl
// port-forward` does: WebSocket first, SPDY when the apiserver (or a proxy
// on the way) cannot upgrade to it. Each Dial sets up a new forward, so a
// dropped one is simply dialled again.
type PortForward struct {
	Config *rest.Config
	Client kubernetes.Interface
	// Namespace and Pod name the relay pod; Pod may be a func of the
	// moment (the Deployment's current pod).
	Namespace string
	Pod       func(ctx context.Context) (string, error)
	Port      int
}

var _ Dialer = (*PortForward)(nil)

// Dial forwards a loopback port to the pod's and connects to it; closing
// the connection ends the forward, and a lost forward closes the
// connection, so the session above sees the loss.
func (p *PortForward) Dial(ctx context.Context) (net.Conn, error) {
	pod, err := p.Pod(ctx)
	if err != nil {
		return nil, err
	}
	dialer, err := p.dialer(pod)
	if err != nil {
		return nil, err
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:" + strconv.Itoa(p.Port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		return nil, fmt.Errorf("port-forward to pod %s/%s: %w", p.Namespace, pod, err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	var once sync.Once
	stopFw := func() { once.Do(func() { close(stop) }) }
	select {
	case <-ready:
	case err := <-done:
		return nil, fmt.Errorf("port-forward to pod %s/%s: %w", p.Namespace, pod, err)
	case <-ctx.Done():
		stopFw()
		<-done
		return nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		stopFw()
		<-done
		return nil, fmt.Errorf("port-forward to pod %s/%s: no local port: %v", p.Namespace, pod, err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))))
	if err != nil {
		stopFw()
		<-done
		return nil, err
	}
	fc := &forwardedConn{Conn: conn, stop: stopFw, done: done}
	go func() {
		// The forward ended (the pod went, the apiserver dropped it):
		// close the connection so the session notices now.
		<-fc.ended()
		conn.Close()
	}()
	return fc, nil
}

// dialer is kubectl's: WebSocket, falling back to SPDY.
func (p *PortForward) dialer(pod string) (httpstream.Dialer, error) {
	u := p.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(p.Namespace).Name(pod).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(p.Config)
	if err != nil {
		return nil, fmt.Errorf("port-forward: %w", err)
	}
	spdyDialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	ws, err := portforward.NewSPDYOverWebsocketDialer(u, p.Config)
	if err != nil {
		return nil, fmt.Errorf("port-forward: %w", err)
	}
	return portforward.NewFallbackDialer(ws, spdyDialer, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	}), nil
}

// forwardedConn ends its port-forward when closed.
type forwardedConn struct {
	net.Conn
	stop func()
	done chan error
	once sync.Once
	end  chan struct{}
	mu   sync.Mutex
}

// ended is closed once the forward has stopped, whoever stopped it.
func (c *forwardedConn) ended() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.end == nil {
		c.end = make(chan struct{})
		go func() { <-c.done; close(c.end) }()
	}
	return c.end
}

func (c *forwardedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.stop()
		<-c.ended()
	})
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
