// Command cluster measures hookback against a real control plane: the
// latency it adds to a pod create, the time from `hookback start` to a
// verified registration, the time from a template edit to the new
// configuration being live, and the memory its shared pod informer takes
// at thousands of pods. It prints a Markdown report on stdout and progress
// on stderr. hack/bench-cluster builds hookback, brings the local control
// plane up and runs it; see docs/performance.md.
//
// Everything it creates lives in namespaces named hookback-bench-*, which it
// deletes (and waits for) before it exits, also on Ctrl-C. The webhook
// configurations it registers are scoped to its own namespaces (the shipped
// template with the namespaceSelector's NotIn turned into an In), so other
// users of the cluster never see them.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

type config struct {
	kubeconfig  string
	binary      string
	template    string
	workdir     string
	sections    string
	creates     int
	warmup      int
	starts      int
	edits       int
	pods        int
	labels      int
	concurrency int
	podStatus   bool
	settle      time.Duration
	hookbackEnv string
	// conversion: the e2e/crmanager binary and its CRD, widgets listed.
	crManager, crdFile     string
	objects, lists, rounds int
}

// env is what every section shares.
type env struct {
	cfg      config
	rest     *rest.Config
	client   kubernetes.Interface
	tmpl     string // the shipped template's text
	stateDir string
	procs    *procs
	nss      *namespaces
	out      io.Writer
}

func main() {
	if addr := os.Getenv(crManagerEnv); addr != "" {
		if err := runCRManager(addr); err != nil {
			log.Fatal(err)
		}
		return
	}
	if spec := os.Getenv(convProxyEnv); spec != "" {
		if err := runConvProxy(spec); err != nil {
			log.Fatal(err)
		}
		return
	}
	if spec := os.Getenv(floorEnv); spec != "" {
		if err := runFloor(spec); err != nil {
			log.Fatal(err)
		}
		return
	}
	var c config
	flag.StringVar(&c.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster to measure against")
	flag.StringVar(&c.binary, "hookback", "", "path of the hookback binary to measure (required)")
	flag.StringVar(&c.template, "template", "webhook-url.yaml.tmpl", "the shipped webhook template; copies of it are scoped to the bench namespaces")
	flag.StringVar(&c.workdir, "workdir", "", "state directories, templates and hookback logs (default: a temporary directory)")
	flag.StringVar(&c.sections, "sections", "latency,start,reload,memory", "which measurements to run, comma-separated")
	flag.IntVar(&c.creates, "creates", 300, "latency: measured dry-run pod creates per variant")
	flag.IntVar(&c.warmup, "warmup", 30, "latency: unmeasured dry-run creates per variant first")
	flag.IntVar(&c.starts, "starts", 10, "start: warm runs of `hookback start` (one cold run comes first)")
	flag.IntVar(&c.edits, "edits", 10, "reload: template edits")
	flag.IntVar(&c.pods, "pods", 3000, "memory, manager: pods to create")
	flag.IntVar(&c.labels, "labels", 50, "manager: pods each controller labels, one at a time")
	flag.IntVar(&c.concurrency, "concurrency", 10, "memory: concurrent pod creates")
	flag.BoolVar(&c.podStatus, "pod-status", true, "memory: give the pods a Running status (two container statuses, IPs, conditions) so they are as large as running pods")
	flag.DurationVar(&c.settle, "settle", 30*time.Second, "memory: how long to wait at most for hookback's heap to settle")
	flag.StringVar(&c.hookbackEnv, "hookback-env", "", "memory, latency: extra NAME=VALUE environment for hookback, comma-separated (e.g. GODEBUG=gctrace=1, or HOOKBACK_LOG_LEVEL=warn to find what a log line costs)")
	flag.StringVar(&c.crManager, "crmanager", "", "conversion: the e2e/crmanager binary")
	flag.StringVar(&c.crdFile, "crd", "e2e/crmanager/config/crd/bases/e2e.hookback.dev_widgets.yaml", "conversion: the CRD the manager converts")
	flag.IntVar(&c.objects, "objects", 1000, "conversion: widgets listed in their non-storage version")
	flag.IntVar(&c.lists, "lists", 10, "conversion: timed lists per path and round")
	flag.IntVar(&c.rounds, "rounds", 4, "conversion: rounds, each through a bare forwarding proxy, then direct, then through hookback")
	flag.Parse()
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	log.SetPrefix("bench-cluster: ")
	// The program's one exit point, as in hookback's own main.
	if err := run(c); err != nil {
		log.Fatal(err)
	}
}

func run(c config) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e, removeWorkdir, err := newEnv(c)
	if err != nil {
		return err
	}
	defer removeWorkdir()
	// Whatever happens, stop every hookback we started (so they deregister),
	// then delete every namespace we created and wait for them to go.
	defer func() {
		e.procs.stopAll()
		cctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if cerr := e.nss.deleteAll(cctx); cerr != nil {
			err = errors.Join(err, fmt.Errorf("cleanup: %w", cerr))
		}
	}()
	if err := e.header(ctx); err != nil {
		return err
	}
	return e.sections(ctx, strings.Split(c.sections, ","))
}

// newEnv checks the flags, connects and prepares the work directory (a
// temporary one, which removeWorkdir deletes, unless -workdir names one).
func newEnv(c config) (e *env, removeWorkdir func(), err error) {
	removeWorkdir = func() {}
	if c.binary == "" {
		return nil, nil, errors.New("-hookback is required: the path of the hookback binary to measure")
	}
	if c.kubeconfig == "" {
		return nil, nil, errors.New("no kubeconfig: pass -kubeconfig or set KUBECONFIG")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	// Sequential latency samples must never wait on client-side throttling;
	// the memory section bounds its load with -concurrency instead.
	rc.QPS, rc.Burst = 1000, 2000
	rc.UserAgent = "hookback-bench-cluster"
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, nil, err
	}
	tmpl, err := os.ReadFile(c.template)
	if err != nil {
		return nil, nil, err
	}
	if c.binary, err = filepath.Abs(c.binary); err != nil {
		return nil, nil, err
	}
	if c.workdir == "" {
		if c.workdir, err = os.MkdirTemp("", "hookback-bench-cluster-"); err != nil {
			return nil, nil, err
		}
		dir := c.workdir
		removeWorkdir = func() { os.RemoveAll(dir) }
	}
	if c.workdir, err = filepath.Abs(c.workdir); err == nil {
		err = os.MkdirAll(filepath.Join(c.workdir, "logs"), 0o755)
	}
	if err != nil {
		removeWorkdir()
		return nil, nil, err
	}
	return &env{
		cfg: c, rest: rc, client: cs, tmpl: string(tmpl),
		stateDir: filepath.Join(c.workdir, "state"),
		procs:    &procs{},
		nss:      &namespaces{client: cs},
		out:      os.Stdout,
	}, removeWorkdir, nil
}

// sections runs each named section in turn, each followed by the load
// average before and after it.
func (e *env) sections(ctx context.Context, names []string) error {
	for _, s := range names {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		load := loadavg()
		var err error
		switch s {
		case "latency":
			err = e.latency(ctx)
		case "start":
			err = e.startup(ctx)
		case "reload":
			err = e.reload(ctx)
		case "memory":
			err = e.memory(ctx)
		case "manager":
			err = e.manager(ctx)
		case "conversion":
			err = e.conversion(ctx)
		default:
			err = fmt.Errorf("unknown section %q", s)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		fmt.Fprintf(e.out, "Load average (1 min) on the machine: %s before, %s after.\n\n", load, loadavg())
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// header prints what the figures were measured on.
func (e *env) header(ctx context.Context) error {
	v, err := e.client.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("server version: %w", err)
	}
	ver, _ := commandOutput(ctx, e.cfg.binary, "version")
	fmt.Fprintf(e.out, "Measured %s with `hack/bench-cluster`.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(e.out, "| | |\n|---|---|\n")
	fmt.Fprintf(e.out, "| machine | %d cores (`nproc`), %s, %s/%s |\n", runtime.NumCPU(), cpuModel(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(e.out, "| cluster | Kubernetes %s (kube-apiserver at %s) |\n", v.GitVersion, e.rest.Host)
	fmt.Fprintf(e.out, "| hookback | %s, built with %s |\n", strings.TrimSpace(firstLine(ver)), runtime.Version())
	fmt.Fprintln(e.out)
	return nil
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// loadavg is the 1-minute load average: other work on the machine (the
// other users of this cluster) shows in the figures.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
