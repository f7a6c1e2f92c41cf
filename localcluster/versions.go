package localcluster

import (
	"os"
	"path/filepath"
	"runtime"
)

// Pinned versions. DefaultKubeVersion is the Kubernetes release hookback's
// client-go (v0.36.3) belongs to; the embedded build module (buildmod/go.mod.in)
// requires exactly these (TestBuildModulePinsTheVersions).
const (
	DefaultKubeVersion = "v1.36.3"
	DefaultKwokVersion = "v0.8.0"
	// SourceEtcdVersion is the etcd the build module builds; release archives
	// bring the etcd their envtest archive holds.
	SourceEtcdVersion = "v3.6.8"
)

// Where release artifacts come from by default.
const (
	// DefaultIndexURL is setup-envtest's default index (controller-runtime
	// tools/setup-envtest/remote.DefaultIndexURL).
	DefaultIndexURL = "https://raw.githubusercontent.com/kubernetes-sigs/controller-tools/HEAD/envtest-releases.yaml"
	// DefaultKwokReleasesURL is the GitHub releases API of kwok: a release's
	// assets carry the sha256 digest GitHub computed at upload.
	DefaultKwokReleasesURL = "https://api.github.com/repos/kubernetes-sigs/kwok/releases"
	// DefaultKubeReleaseURL serves Kubernetes release binaries with a .sha512
	// file beside each (dl.k8s.io/release/vX.Y.Z/bin/OS/ARCH/NAME).
	DefaultKubeReleaseURL = "https://dl.k8s.io/release"
)

// Binary names.
const (
	Etcd                  = "etcd"
	KubeAPIServer         = "kube-apiserver"
	Kubectl               = "kubectl"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Kwok                  = "kwok"
	Kwokctl               = "kwokctl"
)

// envtestNames are what an envtest archive holds; kubeNames are the control
// plane binaries dl.k8s.io publishes for Linux only; kwokNames are kwok's.
var (
	envtestNames = []string{Etcd, KubeAPIServer, Kubectl}
	kubeNames    = []string{KubeControllerManager, KubeScheduler}
	kwokNames    = []string{Kwok, Kwokctl}
	allNames     = []string{KubeAPIServer, KubeControllerManager, KubeScheduler, Kubectl, Etcd, Kwok, Kwokctl}
)

// DefaultCacheDir is $HOOKBACK_CACHE_DIR's default: ~/.cache/hookback (or
// $XDG_CACHE_HOME/hookback), shared by every clone on the machine.
func DefaultCacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "hookback")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".cache", "hookback")
	}
	return filepath.Join(os.TempDir(), "hookback-cache")
}

// SourceDir is where GoBuilder's binaries live in cacheDir, one directory per
// set of versions (hack/cluster used the same path, so its builds are reused).
func SourceDir(cacheDir, kubeVersion, kwokVersion string) string {
	return filepath.Join(cacheDir, "cluster-bin", "k8s-"+kubeVersion+"_etcd-"+SourceEtcdVersion+"_kwok-"+kwokVersion)
}

// platform is GOOS-GOARCH, as release artifacts name it.
func platform() (goos, goarch string) { return runtime.GOOS, runtime.GOARCH }
