package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/localcluster"
)

// clusterOptions are the flags of `hookback cluster`'s subcommands.
type clusterOptions struct {
	Name, Dir, CacheDir                 string
	KubeVersion, KwokVersion            string
	Index, KwokReleases, KubeReleaseURL string
	FromSource                          bool
	Binaries                            string
	Wait                                time.Duration
}

func defaultClusterOptions() clusterOptions {
	return clusterOptions{
		Name: localcluster.DefaultName, CacheDir: localcluster.DefaultCacheDir(),
		KubeVersion: localcluster.DefaultKubeVersion, KwokVersion: localcluster.DefaultKwokVersion,
		Index: localcluster.DefaultIndexURL, KwokReleases: localcluster.DefaultKwokReleasesURL,
		KubeReleaseURL: localcluster.DefaultKubeReleaseURL, Wait: 3 * time.Minute,
	}
}

// Flags every subcommand takes (which cluster), and those of up and binaries
// (where binaries come from).
var (
	clusterWhichFlags    = []string{"name", "cluster-dir", "cache-dir"}
	clusterBinariesFlags = []string{"kube-version", "kwok-version", "index", "kwok-releases", "kube-release-url", "from-source", "binaries"}
)

func (o *clusterOptions) bind(b *binder) {
	bind(b, &o.Name, "name", catCluster, "the cluster's name: clusters of different names run side by side")
	bind(b, &o.Dir, "cluster-dir", catCluster, "the cluster's state directory: processes' logs and pid files, certificates, kubeconfig (default: <cache-dir>/clusters/<name>)")
	bind(b, &o.CacheDir, "cache-dir", catCluster, "binaries downloaded or built, shared by every clone and cluster")
	bind(b, &o.KubeVersion, "kube-version", catCluster, "Kubernetes version of kube-apiserver, kubectl, kube-controller-manager, kube-scheduler; the default is the release hookback's client-go belongs to", sets("localcluster.BinaryOptions.KubeVersion"))
	bind(b, &o.KwokVersion, "kwok-version", catCluster, "kwok version (its controller runs the fake nodes)")
	bind(b, &o.Index, "index", catCluster, "setup-envtest's release index (YAML): etcd, kube-apiserver, kubectl archives with their sha512")
	bind(b, &o.KwokReleases, "kwok-releases", catCluster, "kwok's GitHub releases API: kwok and kwokctl with their sha256 digests")
	bind(b, &o.KubeReleaseURL, "kube-release-url", catCluster, "where kube-controller-manager and kube-scheduler are published with a .sha512 beside each (Linux only)")
	bind(b, &o.FromSource, "from-source", catCluster, "build the binaries from Go modules (needs go; minutes on first use) instead of downloading them; automatic when the index cannot be reached", sets("localcluster.BinaryOptions.FromSource"))
	bind(b, &o.Binaries, "binaries", catCluster, "use the binaries in this directory as they are (at least etcd, kube-apiserver, kubectl; default $KUBEBUILDER_ASSETS)")
	bind(b, &o.Wait, "wait", catCluster, "how long to wait for each step of readiness")
}

// cluster builds the localcluster.Cluster the options name.
func (o clusterOptions) cluster(c *cli.Context) (*localcluster.Cluster, error) {
	bins := o.Binaries
	if bins == "" {
		bins = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if o.FromSource && bins != "" && o.Binaries != "" {
		return nil, usage(errors.New("--from-source and --binaries exclude each other: build the binaries, or use a directory of them"))
	}
	if o.FromSource {
		bins = ""
	}
	return localcluster.New(localcluster.Options{
		Name: o.Name, Dir: o.Dir, Wait: o.Wait, Log: c.App.ErrWriter,
		Binaries: localcluster.BinaryOptions{
			CacheDir: o.CacheDir, KubeVersion: o.KubeVersion, KwokVersion: o.KwokVersion,
			IndexURL: o.Index, KwokReleasesURL: o.KwokReleases, KubeReleaseURL: o.KubeReleaseURL,
			FromSource: o.FromSource, Dir: bins, Notice: c.App.ErrWriter,
		},
	})
}

var clusterExamples = []Example{
	{Command: "hookback cluster up --name example", Comment: "start a local cluster; the last line printed is its kubeconfig"},
	{Command: "hookback cluster status --name example", Comment: "its processes and whether the apiserver is ready"},
	{Command: "hookback cluster kubeconfig --name example", Comment: "then: export KUBECONFIG=$(hookback cluster kubeconfig --name example)"},
	{Command: "hookback cluster down --name example", Comment: "stop every process it started and remove what it made"},
}

func clusterCommand() (*cli.Command, *binder) {
	g, o, b := defaultGlobalOptions(), defaultClusterOptions(), &binder{}
	o.bind(b)
	all := withGlobal(&g, b)
	flags := func(names ...string) []cli.Flag {
		names = append(names, globalFlagNames...)
		return slices.DeleteFunc(slices.Clone(all), func(f cli.Flag) bool { return !slices.Contains(names, f.Names()[0]) })
	}
	which := clusterWhichFlags
	upFlags := append(append(slices.Clone(which), clusterBinariesFlags...), "wait")
	cmd := &cli.Command{
		Name:  "cluster",
		Usage: "a local control plane to try hookback on: etcd, kube-apiserver, kwok's fake nodes (no container engine)",
		Description: `cluster runs a local Kubernetes control plane as background processes of this
machine: etcd, kube-apiserver, kwok's controller (fake nodes on which pods become
Running) and, where the platform has them, kube-controller-manager and
kube-scheduler. Its binaries are downloaded once from release artifacts, each
checked against its published sha512 or sha256 (setup-envtest's index, dl.k8s.io,
kwok's GitHub release), into --cache-dir; --from-source builds them from Go
modules instead, which is what happens, said in one line, when the index cannot be
reached; --binaries (or KUBEBUILDER_ASSETS) uses a directory as it is.
See docs/cluster.md.` + examplesText(clusterExamples),
		Flags: all,
		Subcommands: []*cli.Command{
			{
				Name:  "up",
				Usage: "start the cluster (or reuse it when it runs) and print its kubeconfig's path",
				Flags: flags(upFlags...),
				Action: func(c *cli.Context) error {
					b.load(c)
					return clusterUp(c, o)
				},
			},
			{
				Name:  "down",
				Usage: "stop every process of the cluster and remove what up created (the binaries stay cached)",
				Flags: flags(which...),
				Action: func(c *cli.Context) error {
					b.load(c)
					cl, err := o.cluster(c)
					if err != nil {
						return err
					}
					return cl.Down(c.Context)
				},
			},
			{
				Name:  "status",
				Usage: "the cluster's processes and whether its apiserver is ready; exit 1 unless all are",
				Flags: flags(which...),
				Action: func(c *cli.Context) error {
					b.load(c)
					return clusterStatus(c, o)
				},
			},
			{
				Name:  "kubeconfig",
				Usage: "print the path of the cluster's admin kubeconfig",
				Flags: flags(which...),
				Action: func(c *cli.Context) error {
					b.load(c)
					cl, err := o.cluster(c)
					if err != nil {
						return err
					}
					p, err := cl.Kubeconfig()
					if err != nil {
						return err
					}
					_, err = fmt.Fprintln(c.App.Writer, p)
					return err
				},
			},
			{
				Name:  "binaries",
				Usage: "download (or build) the binaries into the cache without starting anything, and print the directory of kubectl",
				Flags: flags(append(slices.Clone(which), clusterBinariesFlags...)...),
				Action: func(c *cli.Context) error {
					b.load(c)
					cl, err := o.cluster(c)
					if err != nil {
						return err
					}
					bins, err := cl.Binaries(c.Context)
					if err != nil {
						return err
					}
					_, err = fmt.Fprintln(c.App.Writer, filepath.Dir(bins.Kubectl))
					return err
				},
			},
		},
	}
	return cmd, b
}

func clusterUp(c *cli.Context, o clusterOptions) error {
	cl, err := o.cluster(c)
	if err != nil {
		return err
	}
	r, err := cl.Up(c.Context)
	if err != nil {
		return err
	}
	w := c.App.ErrWriter
	verb := "ready"
	if r.Reused {
		verb = "already running"
	}
	fmt.Fprintf(w, "cluster %s is %s (%.1fs): %s, binaries: %s\n", cl.Name(), verb, r.Took.Seconds(), r.Server, r.Binaries.Origin)
	if !r.Binaries.HasControllers() {
		fmt.Fprintln(w, "it runs without kube-controller-manager and kube-scheduler (none for this platform): Deployments make no pods; create Pods directly")
	}
	nameFlag := ""
	if cl.Name() != localcluster.DefaultName {
		nameFlag = " --name " + cl.Name()
	}
	fmt.Fprintf(w, "use it:   export KUBECONFIG=%s; hookback start\n", r.Kubeconfig)
	fmt.Fprintf(w, "stop it:  hookback cluster down%s\n", nameFlag)
	_, err = fmt.Fprintln(c.App.Writer, r.Kubeconfig)
	return err
}

func clusterStatus(c *cli.Context, o clusterOptions) error {
	cl, err := o.cluster(c)
	if err != nil {
		return err
	}
	s, err := cl.Status(c.Context)
	if err != nil {
		return err
	}
	w := c.App.Writer
	fmt.Fprintf(w, "cluster %s (%s)\n", s.Name, s.Dir)
	var down []string
	for _, comp := range s.Components {
		switch {
		case comp.Absent:
			fmt.Fprintf(w, "  %-24s not installed: Deployments make no pods and namespaces get no default ServiceAccount\n", comp.Name)
		case comp.Running:
			fmt.Fprintf(w, "  %-24s running (pid %d)\n", comp.Name, comp.PID)
		default:
			fmt.Fprintf(w, "  %-24s NOT RUNNING (pid file: %d)\n", comp.Name, comp.PID)
			down = append(down, comp.Name)
		}
	}
	if s.Ready {
		fmt.Fprintf(w, "  %-24s %s /readyz ok\n", "apiserver", s.Server)
	} else {
		fmt.Fprintf(w, "  %-24s %s NOT READY: %v\n", "apiserver", s.Server, s.ReadyErr)
	}
	fmt.Fprintf(w, "  %-24s %s\n  %-24s %s\n", "kubeconfig", s.Kubeconfig, "binaries", s.Binaries.Origin)
	if s.Healthy() {
		return nil
	}
	why := "its apiserver is not ready"
	if len(down) > 0 {
		why = strings.Join(down, ", ") + " not running"
	}
	return fmt.Errorf("cluster %s is not healthy (%s): restart it with hookback cluster up%s", s.Name, why, map[bool]string{true: "", false: " --name " + s.Name}[s.Name == localcluster.DefaultName])
}
