// Command clusterup measures `hookback cluster up`: a first cluster from an
// empty cache (download, sha512/sha256 checks, unpack, start), a second `up`
// from that cache, and, as the reference in the same run, `up --binaries` on
// the same binaries already unpacked (the start alone, nothing fetched). The
// release artifacts are served on loopback by localcluster/releasetest in
// their real formats, packed from hack/cluster's source build, since no
// release can be downloaded on the machines the figures come from.
// hack/bench-clusterup builds hookback and runs it; it prints a Markdown
// report on stdout and progress on stderr. See docs/performance.md.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hookback/hookback/localcluster"
	"github.com/hookback/hookback/localcluster/releasetest"
)

func main() {
	hookback := flag.String("hookback", "", "the hookback binary to measure")
	bins := flag.String("bins", "", "directory of the seven source-built binaries (hack/cluster/build --print-dir)")
	runs := flag.Int("runs", 3, "rounds of (cold, warm, reference)")
	flag.Parse()
	if *hookback == "" || *bins == "" {
		log.Fatal("usage: clusterup -hookback PATH -bins DIR [-runs N]")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *hookback, *bins, *runs); err != nil {
		log.Fatal(err)
	}
}

// timing is one measured command.
type timing struct {
	what string
	took time.Duration
}

func run(ctx context.Context, hookback, bins string, runs int) error {
	work, err := os.MkdirTemp("", "hookback-bench-clusterup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	packStart := time.Now()
	srv, err := releasetest.Start(releasetest.Options{BinDir: bins, KubeVersion: localcluster.DefaultKubeVersion,
		KwokVersion: localcluster.DefaultKwokVersion, OS: runtime.GOOS, Arch: runtime.GOARCH, WorkDir: filepath.Join(work, "releases")})
	if err != nil {
		return fmt.Errorf("serve releases: %w", err)
	}
	defer srv.Close()
	log.Printf("release artifacts packed and served in %s", time.Since(packStart).Round(time.Millisecond))
	sources := []string{"--index", srv.IndexURL, "--kwok-releases", srv.KwokReleasesURL, "--kube-release-url", srv.KubeReleaseURL}
	results := map[string][]time.Duration{}
	for i := range runs {
		cache := filepath.Join(work, fmt.Sprintf("cache-%d", i))
		c := cluster{hookback: hookback, name: fmt.Sprintf("bench-%d", i), dir: filepath.Join(work, fmt.Sprintf("state-%d", i)), cache: cache}
		steps := []struct {
			what string
			args []string
		}{
			{"cold: first up from an empty cache", sources},
			{"warm: second up from the cache", sources},
			{"reference: up --binaries (nothing fetched)", []string{"--binaries", bins}},
		}
		for _, s := range steps {
			took, err := c.up(ctx, s.args)
			if err != nil {
				// A cluster that failed to start may have started processes.
				return errors.Join(fmt.Errorf("round %d, %s: %w", i+1, s.what, err), c.down(context.WithoutCancel(ctx)))
			}
			log.Printf("round %d: %s: %s", i+1, s.what, took.Round(time.Millisecond))
			results[s.what] = append(results[s.what], took)
			if err := c.down(ctx); err != nil {
				return err
			}
		}
		// The download, checks and unpack alone, into another empty cache.
		c.cache = filepath.Join(work, fmt.Sprintf("cache-bin-%d", i))
		start := time.Now()
		if _, err := c.hb(ctx, append([]string{"binaries"}, sources...)...); err != nil {
			return err
		}
		results["binaries alone: download, check, unpack"] = append(results["binaries alone: download, check, unpack"], time.Since(start))
		os.RemoveAll(cache)
		os.RemoveAll(c.cache)
	}
	report(results, runs)
	return nil
}

type cluster struct {
	hookback, name, dir, cache string
}

func (c cluster) hb(ctx context.Context, args ...string) (string, error) {
	full := append([]string{"cluster", args[0], "--name", c.name, "--cluster-dir", c.dir, "--cache-dir", c.cache}, args[1:]...)
	cmd := exec.CommandContext(ctx, c.hookback, full...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "KUBEBUILDER_ASSETS=") })
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hookback %s: %w\n%s", strings.Join(full, " "), err, errOut.String())
	}
	return out.String(), nil
}

// up runs `hookback cluster up` to completion: it returns once the cluster
// is ready (readyz, node Ready, default ServiceAccount).
func (c cluster) up(ctx context.Context, extra []string) (time.Duration, error) {
	start := time.Now()
	out, err := c.hb(ctx, append([]string{"up"}, extra...)...)
	if err != nil {
		return 0, err
	}
	if !strings.HasSuffix(strings.TrimSpace(out), "kubeconfig") {
		return 0, errors.New("up printed no kubeconfig path: " + out)
	}
	return time.Since(start), nil
}

func (c cluster) down(ctx context.Context) error {
	_, err := c.hb(ctx, "down")
	return err
}

func report(results map[string][]time.Duration, runs int) {
	fmt.Printf("`hookback cluster up`, %d rounds, %s/%s, %d CPUs (load average at the end: %s)\n\n", runs, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), loadavg())
	fmt.Println("| step | median | min | max |")
	fmt.Println("|---|---|---|---|")
	for _, what := range []string{"cold: first up from an empty cache", "warm: second up from the cache",
		"reference: up --binaries (nothing fetched)", "binaries alone: download, check, unpack"} {
		d := slices.Clone(results[what])
		slices.Sort(d)
		fmt.Printf("| %s | %.1f s | %.1f s | %.1f s |\n", what, d[len(d)/2].Seconds(), d[0].Seconds(), d[len(d)-1].Seconds())
	}
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
