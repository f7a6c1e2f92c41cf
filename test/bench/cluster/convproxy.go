package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"time"
)

// convProxyEnv, when set, makes this program the conversion section's
// floor: the cheapest forwarding there can be, so the cost of a second hop
// can be told from hookback's own. Its value is "UPSTREAM-URL CA-FILE".
const convProxyEnv = "BENCH_CONV_PROXY"

// runConvProxy serves, until its stdin closes, a TLS reverse proxy that
// forwards every request as it is to the upstream, over connections kept
// alive, with the same transport settings as hookback's forwarder (HTTP/2
// when offered), and checks nothing. It counts calls like a floor.
func runConvProxy(spec string) error {
	h, err := convProxyHandler(spec)
	if err != nil {
		return err
	}
	srv, addr, ca, err := serveFloor(h)
	if err != nil {
		return err
	}
	fmt.Printf("%s %s\n", addr, base64.StdEncoding.EncodeToString(ca))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return srv.Close()
}

func convProxyHandler(spec string) (http.Handler, error) {
	raw, caFile, ok := strings.Cut(spec, " ")
	if !ok {
		return nil, fmt.Errorf("%s=%q: want \"UPSTREAM-URL CA-FILE\"", convProxyEnv, spec)
	}
	target, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: upstream: %w", convProxyEnv, err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New(convProxyEnv + ": the upstream's CA does not parse")
	}
	c := new(floorCounter)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 16,
			IdleConnTimeout: 90 * time.Second, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		proxy.ServeHTTP(w, r)
		c.calls.Add(1)
		c.nanos.Add(int64(time.Since(start)))
	})
	mux.HandleFunc("GET /calls", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, c.calls.Load(), c.nanos.Load())
	})
	return mux, nil
}

// startConvProxy runs runConvProxy in a child process, as hookback runs in
// one of its own.
func startConvProxy(upstream, caFile string) (*floorProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return startServerProcess(self, convProxyEnv+"="+upstream+" "+caFile)
}
