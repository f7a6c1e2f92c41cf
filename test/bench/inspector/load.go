package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/hookback/hookback/bench/internal/loopcert"
)

// load sends pod CREATE reviews to one webhook path over one HTTP/2
// connection, as the apiserver does. Every tenth pod has a banned word, so
// the page shows denials as well as allowed rows.
type load struct {
	url    string
	client *http.Client
	seq    int
}

func newLoad(addr string, pool *x509.CertPool, path string) *load {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 64}
	return &load{url: "https://" + addr + path + "?timeout=10s", client: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

func review(seq int) []byte {
	name := fmt.Sprintf("bench-%d", seq)
	if seq%10 == 0 {
		name = fmt.Sprintf("offensive-bench-%d", seq)
	}
	return fmt.Appendf(nil, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"bench-uid-%d",`+
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},`+
		`"name":%q,"namespace":"bench","operation":"CREATE","userInfo":{"username":"bench","groups":["system:authenticated"]},`+
		`"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"bench","labels":{"app":"web"}},`+
		`"spec":{"serviceAccountName":"default","containers":[{"name":"app","image":"registry.example/app:1.0",`+
		`"resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}},"dryRun":false}}`, seq, name, name)
}

func (l *load) send(ctx context.Context, seq int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader(review(seq)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := l.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("review %d: HTTP %d", seq, resp.StatusCode)
	}
	return nil
}

// warm opens the connection and warms the server before anything is timed.
func (l *load) warm(ctx context.Context, n int) error {
	for range n {
		l.seq++
		if err := l.send(ctx, l.seq); err != nil {
			return fmt.Errorf("warm up: %w", err)
		}
	}
	return nil
}

// run sends rate reviews a second for d, each on its own schedule whether
// or not the previous one was answered (an open loop, like the apiserver's
// callers). It returns when each was answered (Unix ms, by pod name) and
// every latency in ms.
func (l *load) run(ctx context.Context, rate int, d time.Duration) (map[string]int64, []float64, error) {
	var (
		mu       sync.Mutex
		answered = map[string]int64{}
		lat      []float64
		firstErr error
		wg       sync.WaitGroup
	)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	end := time.After(d)
	for done := false; !done; {
		select {
		case <-end:
			done = true
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-tick.C:
			l.seq++
			seq := l.seq
			wg.Go(func() {
				t0 := time.Now()
				err := l.send(ctx, seq)
				t1 := time.Now()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					firstErr = err
					return
				}
				lat = append(lat, float64(t1.Sub(t0).Microseconds())/1000)
				answered[fmt.Sprint(seq)] = t1.UnixMilli()
			})
		}
	}
	wg.Wait()
	return answered, lat, firstErr
}

// selfSigned is a throwaway serving certificate for 127.0.0.1.
func selfSigned() (*tls.Config, *x509.CertPool, error) {
	c, err := loopcert.New("bench-inspector")
	if err != nil {
		return nil, nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{c.TLS()}, NextProtos: []string{"h2", "http/1.1"}}, c.Pool, nil
}
