package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hookback/hookback/bench/internal/loopcert"
)

var servers = []string{"hookback", "controller-runtime", "bare"}

type result struct {
	reqs    int64
	elapsed time.Duration
	lat     []time.Duration
	cpu     time.Duration // the server process's user+system time
	errors  int64
	alloc   uint64 // bytes the server allocated
	gcs     uint64 // collections the server completed
	goal    uint64 // the server's heap goal after the run (the largest of merged rounds)
}

// key names one cell of the report.
type key struct {
	proto string
	conc  int
	srv   string
}

// drive runs every combination and prints the report.
func drive(out io.Writer, duration time.Duration, rounds int, protos []string, concs []int) error {
	dir, err := os.MkdirTemp("", "hookback-throughput-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	pool, err := writeCert(dir)
	if err != nil {
		return err
	}
	body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "admission", "pod-create.v1.json"))
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	all := map[key][]result{}
	for _, proto := range protos {
		for _, conc := range concs {
			for r := range rounds {
				order := slices.Clone(servers)
				if r%2 == 1 {
					slices.Reverse(order)
				}
				for _, s := range order {
					res, err := runOnce(self, s, dir, pool, proto, conc, duration, body)
					if err != nil {
						return fmt.Errorf("%s %s c=%d: %w", s, proto, conc, err)
					}
					k := key{proto, conc, s}
					all[k] = append(all[k], res)
					fmt.Fprintf(os.Stderr, "%s %s c=%d: %.0f req/s\n", s, proto, conc, float64(res.reqs)/res.elapsed.Seconds())
				}
			}
		}
	}
	report(out, all, protos, concs)
	return nil
}

// report prints one row per protocol, concurrency and server, each
// server's rounds merged.
func report(out io.Writer, all map[key][]result, protos []string, concs []int) {
	fmt.Fprintf(out, "| protocol | concurrency | server | req/s | p50 | p99 | server CPU s / 10k req | server KiB allocated / req | server GCs / 10k req | server heap goal after a run, MiB | errors | req/s vs controller-runtime | req/s vs bare |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, proto := range protos {
		for _, conc := range concs {
			rate := map[string]float64{}
			merged := map[string]result{}
			for _, s := range servers {
				m := merge(all[key{proto, conc, s}])
				merged[s], rate[s] = m, float64(m.reqs)/m.elapsed.Seconds()
			}
			for _, s := range servers {
				m := merged[s]
				fmt.Fprintf(out, "| %s | %d | %s | %.0f | %s | %s | %.2f | %.1f | %.1f | %.1f | %d | %.2f× | %.2f× |\n", proto, conc, s, rate[s],
					q(m.lat, .5), q(m.lat, .99), m.cpu.Seconds()/float64(m.reqs)*1e4, float64(m.alloc)/1024/float64(m.reqs),
					float64(m.gcs)/float64(m.reqs)*1e4, float64(m.goal)/(1<<20), m.errors, rate[s]/rate["controller-runtime"], rate[s]/rate["bare"])
			}
		}
	}
}

// merge adds rounds up; the latencies come back sorted.
func merge(rs []result) result {
	var m result
	for _, r := range rs {
		m.reqs += r.reqs
		m.elapsed += r.elapsed
		m.cpu += r.cpu
		m.errors += r.errors
		m.alloc += r.alloc
		m.gcs += r.gcs
		m.goal = max(m.goal, r.goal)
		m.lat = append(m.lat, r.lat...)
	}
	slices.Sort(m.lat)
	return m
}

func q(lat []time.Duration, p float64) string {
	if len(lat) == 0 {
		return "—"
	}
	d := lat[int(p*float64(len(lat)-1))]
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

// runOnce starts one server process, loads it for duration and stops it.
func runOnce(self, kind, dir string, pool *x509.CertPool, proto string, conc int, duration time.Duration, body []byte) (result, error) {
	cmd, srv, addr, err := startServer(self, kind, dir)
	if err != nil {
		return result{}, err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	c := newClient(pool, proto, conc, "https://"+addr+"/validate?timeout=10s", body)
	defer c.tr.CloseIdleConnections()
	// Ready and warm: every connection made before the clock starts.
	deadline := time.Now().Add(10 * time.Second)
	for c.post() != nil {
		if time.Now().After(deadline) {
			return result{}, fmt.Errorf("%s never answered: %w", kind, c.post())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cpu0, err := cpuTime(cmd.Process.Pid)
	if err != nil {
		return result{}, err
	}
	st0, err := srv.stats()
	if err != nil {
		return result{}, err
	}
	res := c.load(conc, duration)
	cpu1, err := cpuTime(cmd.Process.Pid)
	if err != nil {
		return result{}, err
	}
	st1, err := srv.stats()
	if err != nil {
		return result{}, err
	}
	res.cpu, res.alloc, res.gcs, res.goal = cpu1-cpu0, st1.AllocBytes-st0.AllocBytes, st1.GCCycles-st0.GCCycles, st1.HeapGoal
	return res, nil
}

// startServer runs this program as one server and reads the address it
// prints.
func startServer(self, kind, dir string) (*exec.Cmd, serverProc, string, error) {
	cmd := exec.Command(self, "-serve", kind, "-dir", dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, serverProc{}, "", err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, serverProc{}, "", err
	}
	srv := serverProc{pid: cmd.Process.Pid, stdout: bufio.NewReader(stdout)}
	line, err := srv.stdout.ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, serverProc{}, "", fmt.Errorf("read the server's address: %w", err)
	}
	return cmd, srv, strings.TrimSpace(line), nil
}

// client posts the same review over one protocol, as the apiserver does:
// one HTTP/2 connection, or up to conc HTTP/1.1 keep-alive connections.
type client struct {
	tr    *http.Transport
	http  *http.Client
	url   string
	proto string
	body  []byte
}

func newClient(pool *x509.CertPool, proto string, conc int, url string, body []byte) *client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, NextProtos: []string{proto}}, ForceAttemptHTTP2: proto == "h2",
		MaxIdleConnsPerHost: conc, MaxConnsPerHost: conc}
	if proto != "h2" {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &client{tr: tr, http: &http.Client{Transport: tr, Timeout: 10 * time.Second}, url: url, proto: proto, body: body}
}

// post sends one review and checks the answer allows it.
func (c *client) post() error {
	resp, err := c.http.Post(c.url, "application/json", bytes.NewReader(c.body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"allowed":true`)) {
		return fmt.Errorf("status %d: %.200s", resp.StatusCode, b)
	}
	if c.proto == "h2" && resp.ProtoMajor != 2 {
		return fmt.Errorf("served over %s", resp.Proto)
	}
	return nil
}

// load posts from conc goroutines back to back for duration.
func (c *client) load(conc int, duration time.Duration) result {
	var res result
	var mu sync.Mutex
	var errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(duration)
	for range conc {
		wg.Go(func() {
			var lat []time.Duration
			for time.Now().Before(end) {
				t := time.Now()
				if err := c.post(); err != nil {
					errs.Add(1)
					continue
				}
				lat = append(lat, time.Since(t))
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.reqs, res.errors = int64(len(res.lat)), errs.Load()
	return res
}

// cpuTime is a process's user plus system time, from /proc.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100, nil // USER_HZ
}

// writeCert writes a self-signed certificate for 127.0.0.1 and returns a
// pool trusting it.
func writeCert(dir string) (*x509.CertPool, error) {
	c, err := loopcert.New("bench")
	if err != nil {
		return nil, err
	}
	crt, key, err := c.PEM()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600); err != nil {
		return nil, err
	}
	return c.Pool, nil
}
