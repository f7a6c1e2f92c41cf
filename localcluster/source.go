package localcluster

import (
	"context"
	"embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// buildModule is the Go module the binaries are built from: it requires
// k8s.io/kubernetes, etcd's server and kwok at the pinned versions, with each
// k8s.io staging module replaced by its release. Its files carry a .in suffix
// so that it stays data here (a go.mod would make it a module of its own,
// which go:embed cannot reach); GoBuilder writes it out under its real names.
//
//go:embed buildmod/go.mod.in buildmod/go.sum.in buildmod/tools.go.in buildmod/etcd_main.go.in
var buildModule embed.FS

// buildModuleFiles maps the embedded files to where they go in the module.
var buildModuleFiles = map[string]string{
	"buildmod/go.mod.in":       "go.mod",
	"buildmod/go.sum.in":       "go.sum",
	"buildmod/tools.go.in":     "tools.go",
	"buildmod/etcd_main.go.in": "cmd/etcd/main.go",
}

// buildPackages is the main package of each binary, in the build module.
var buildPackages = map[string]string{
	KubeAPIServer:         "k8s.io/kubernetes/cmd/kube-apiserver",
	KubeControllerManager: "k8s.io/kubernetes/cmd/kube-controller-manager",
	KubeScheduler:         "k8s.io/kubernetes/cmd/kube-scheduler",
	Kubectl:               "k8s.io/kubernetes/cmd/kubectl",
	Etcd:                  "./cmd/etcd",
	Kwok:                  "sigs.k8s.io/kwok/cmd/kwok",
	Kwokctl:               "sigs.k8s.io/kwok/cmd/kwokctl",
}

// Builder builds binaries from source. Build writes each named binary into
// dir (which exists and is empty) or returns an error; it may take minutes.
type Builder interface {
	Build(ctx context.Context, dir string, names []string) error
}

var _ Builder = (*GoBuilder)(nil)

// GoBuilder builds with the go command from the embedded build module, in a
// temporary directory, through the module proxy: what hack/cluster/build did,
// available to a hookback installed with go install.
type GoBuilder struct {
	// Go is the go command; empty means "go" on PATH.
	Go string
	// Progress gets the go command's output and a line every 30 s.
	Progress io.Writer
	// Now stamps the binaries' build date; nil means time.Now.
	Now func() time.Time
}

// Build implements Builder.
func (g *GoBuilder) Build(ctx context.Context, dir string, names []string) error {
	goCmd := g.Go
	if goCmd == "" {
		goCmd = "go"
	}
	if _, err := exec.LookPath(goCmd); err != nil {
		return fmt.Errorf("build %s from source: the go command is needed (install Go 1.26 or later): %w", strings.Join(names, ", "), err)
	}
	mod, err := os.MkdirTemp("", "hookback-cluster-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(mod)
	if err := writeBuildModule(mod); err != nil {
		return err
	}
	pkgs := make([]string, 0, len(names))
	for _, n := range names {
		p, ok := buildPackages[n]
		if !ok {
			return fmt.Errorf("build from source: no package for %q", n)
		}
		pkgs = append(pkgs, p)
	}
	out, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	args := append([]string{"build", "-mod=readonly", "-trimpath", "-ldflags", g.ldflags(), "-o", out + string(filepath.Separator)}, pkgs...)
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = mod
	// GOWORK=off: the module is its own, whatever go.work sits above it.
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
	progress := g.Progress
	if progress == nil {
		progress = io.Discard
	}
	cmd.Stdout, cmd.Stderr = progress, progress
	fmt.Fprintf(progress, "building %s from source (Kubernetes %s, etcd %s, kwok %s); a first build takes several minutes\n",
		strings.Join(names, ", "), DefaultKubeVersion, SourceEtcdVersion, DefaultKwokVersion)
	stop := ticker(progress, "still building")
	err = cmd.Run()
	stop()
	if err != nil {
		return fmt.Errorf("build %s from source: go build: %w", strings.Join(names, ", "), err)
	}
	for _, n := range names {
		if !isExecutable(filepath.Join(dir, n)) {
			return fmt.Errorf("build from source: go build did not produce %s", n)
		}
	}
	return nil
}

func writeBuildModule(dst string) error {
	for src, rel := range buildModuleFiles {
		b, err := buildModule.ReadFile(src)
		if err != nil {
			return err
		}
		p := filepath.Join(dst, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ldflags set the version variables as the Kubernetes build (its version.sh) does,
// so /version and --version report the release (kwokctl parses
// `kube-apiserver --version` to pick flags), and kwok's own.
func (g *GoBuilder) ldflags() string {
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	ver := DefaultKubeVersion
	major, rest, _ := strings.Cut(strings.TrimPrefix(ver, "v"), ".")
	minor, _, _ := strings.Cut(rest, ".")
	date := now().UTC().Format(time.RFC3339)
	flags := []string{"-s", "-w"}
	for _, p := range []string{"k8s.io/client-go/pkg/version", "k8s.io/component-base/version"} {
		flags = append(flags,
			"-X", p+".gitVersion="+ver, "-X", p+".gitMajor="+major, "-X", p+".gitMinor="+minor,
			"-X", p+".gitTreeState=clean", "-X", p+".buildDate="+date)
	}
	flags = append(flags,
		"-X", "sigs.k8s.io/kwok/pkg/consts.Version="+strings.TrimPrefix(DefaultKwokVersion, "v"),
		"-X", "sigs.k8s.io/kwok/pkg/consts.KubeVersion="+strings.TrimPrefix(ver, "v"))
	return strings.Join(flags, " ")
}

// ticker writes "<what>... Ns" every 30 s until stop is called, so a long
// build is visibly alive.
func ticker(w io.Writer, what string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(w, "%s... %ds\n", what, int(time.Since(start).Seconds()))
			}
		}
	}()
	return func() { close(done); <-finished }
}
