// Command tunnel measures what the reverse tunnel adds to one admission
// (issue 14, item 5): hookback's real transport serving the pod-name
// built-in over TLS, called directly on loopback, through a relay and an
// attacher joined by one loopback TCP connection (the tunnel's own cost),
// and, with -kubeconfig, through the apiserver's pod port-forward of the
// local control plane (kwok's PortForward resource forwards a fake relay
// pod's control port to a relay on loopback), which is the path start
// --tunnel takes. Reviews go one after another over one kept-alive HTTP/2
// connection per path, as the apiserver sends them; paths alternate by
// round. Only loopback traffic.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/hookback/hookback/bench/internal/loopcert"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/server"
	"github.com/hookback/hookback/tunnel"
)

func main() {
	n := flag.Int("n", 500, "reviews per path per round")
	rounds := flag.Int("rounds", 5, "rounds; the paths alternate within each")
	kubeconfig := flag.String("kubeconfig", "", "local control plane (hack/cluster/up): also measure the port-forward path")
	flag.Parse()
	if err := run(*n, *rounds, *kubeconfig); err != nil {
		fmt.Fprintln(os.Stderr, "bench-tunnel:", err)
		os.Exit(1)
	}
}

// path is one way to the server, with its latencies in ms.
type path struct {
	name   string
	client *http.Client
	ms     []float64
}

func run(n, rounds int, kubeconfig string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	discard := slog.New(slog.DiscardHandler)
	hooks, err := webhooks.Build([]string{webhooks.NamePodName}, webhooks.DefaultOptions(), webhooks.Deps{Log: discard})
	if err != nil {
		return err
	}
	cert, err := loopcert.New("bench-tunnel")
	if err != nil {
		return err
	}
	tlsConf := &tls.Config{Certificates: []tls.Certificate{cert.TLS()}, NextProtos: []string{"h2", "http/1.1"}}
	srv, err := server.NewServer(server.ServerOptions{Address: "127.0.0.1:0", HealthAddress: "127.0.0.1:0", TLS: tlsConf,
		Webhooks: hooks, Log: discard, Metrics: server.NewMetrics()})
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Start(ctx) }()
	defer func() { cancel(); <-errc }()
	local := srv.Addr().String()

	paths := []*path{{name: "direct", client: client(cert, local)}}
	loop, err := loopbackTunnel(ctx, local, nil)
	if err != nil {
		return err
	}
	paths = append(paths, &path{name: "tunnel, loopback TCP", client: client(cert, loop)})
	if kubeconfig != "" {
		pf, cleanup, err := portForwardTunnel(ctx, kubeconfig, local)
		if err != nil {
			return err
		}
		defer cleanup()
		paths = append(paths, &path{name: "tunnel, apiserver port-forward", client: client(cert, pf)})
	}
	body := review()
	for _, p := range paths {
		if err := p.send(ctx, body, 100, false); err != nil {
			return fmt.Errorf("warm up %s: %w", p.name, err)
		}
	}
	for range rounds {
		for _, p := range paths {
			if err := p.send(ctx, body, n, true); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
		}
	}
	report(paths, n, rounds)
	return nil
}

// loopbackTunnel starts a relay and attaches to it straight over loopback TCP; it
// returns the address the apiserver would connect to.
func loopbackTunnel(ctx context.Context, local string, _ tunnel.Dialer) (string, error) {
	r, err := startRelay(ctx)
	if err != nil {
		return "", err
	}
	return attach(ctx, r, local, tunnel.DialerFunc(func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", r.ControlAddr().String())
	}))
}

func startRelay(ctx context.Context) (*tunnel.Relay, error) {
	r, err := tunnel.New(tunnel.Options{Listen: "127.0.0.1:0", Control: "127.0.0.1:0", Secret: "bench"})
	if err != nil {
		return nil, err
	}
	go func() { _ = r.Start(ctx) }()
	return r, nil
}

// attach attaches the laptop side to r through dial and waits until it is.
func attach(ctx context.Context, r *tunnel.Relay, local string, dial tunnel.Dialer) (string, error) {
	up := make(chan struct{}, 1)
	a, err := tunnel.NewAttacher(tunnel.AttachOptions{Dialer: dial, Secret: "bench", Local: local,
		OnUp: func() {
			select {
			case up <- struct{}{}:
			default:
			}
		}})
	if err != nil {
		return "", err
	}
	go func() { _ = a.Start(ctx) }()
	select {
	case <-up:
	case <-time.After(30 * time.Second):
		return "", fmt.Errorf("the tunnel did not attach within 30s")
	}
	return r.Addr().String(), nil
}

func client(cert *loopcert.Cert, addr string) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cert.Pool, ServerName: "127.0.0.1"}, ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func review() []byte {
	return []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"bench-uid",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
		`"name":"web","namespace":"bench","operation":"CREATE","userInfo":{"username":"bench"},` +
		`"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"bench","labels":{"app":"web"}},` +
		`"spec":{"containers":[{"name":"app","image":"registry.example/app:1.0"}]}},"dryRun":false}}`)
}

// send sends n reviews one after another, keeping their latencies.
func (p *path) send(ctx context.Context, body []byte, n int, keep bool) error {
	for range n {
		start := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://127.0.0.1/validate-pod-name?timeout=10s", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := p.client.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d %v", resp.StatusCode, err)
		}
		if keep {
			p.ms = append(p.ms, float64(time.Since(start).Microseconds())/1000)
		}
	}
	return nil
}

func pct(ms []float64, q float64) float64 {
	s := slices.Clone(ms)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func report(paths []*path, n, rounds int) {
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("bench-tunnel: %d reviews per path (%d rounds of %d, alternating), pod-name through hookback's transport, one HTTP/2 connection per path; load average %s\n\n",
		n*rounds, rounds, n, bytes.Fields(load)[0])
	fmt.Println("| path | p50 ms | p90 ms | p99 ms | added p50 over direct |")
	fmt.Println("|---|---|---|---|---|")
	direct := pct(paths[0].ms, 0.5)
	for _, p := range paths {
		fmt.Printf("| %s | %.3f | %.3f | %.3f | %+.3f ms |\n", p.name, pct(p.ms, 0.5), pct(p.ms, 0.9), pct(p.ms, 0.99), pct(p.ms, 0.5)-direct)
	}
}
