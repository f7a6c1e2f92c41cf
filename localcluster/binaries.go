package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Binaries are the programs a cluster runs, by absolute path.
// KubeControllerManager and KubeScheduler are empty where they cannot be had
// (no release binary for the platform, or a --binaries directory without
// them): the cluster then runs without them and Deployments make no pods.
type Binaries struct {
	Etcd                  string `json:"etcd"`
	KubeAPIServer         string `json:"kubeApiserver"`
	Kubectl               string `json:"kubectl"`
	Kwok                  string `json:"kwok"`
	Kwokctl               string `json:"kwokctl"`
	KubeControllerManager string `json:"kubeControllerManager,omitempty"`
	KubeScheduler         string `json:"kubeScheduler,omitempty"`
	// Origin says where they came from, for messages and status.
	Origin string `json:"origin"`
}

// Dirs are the directories holding the binaries, for PATH.
func (b Binaries) Dirs() []string {
	var dirs []string
	for _, p := range []string{b.Kubectl, b.KubeAPIServer, b.Etcd, b.Kwok, b.Kwokctl, b.KubeControllerManager, b.KubeScheduler} {
		if d := filepath.Dir(p); p != "" && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// BinaryOptions say where binaries come from.
type BinaryOptions struct {
	// CacheDir is shared by every clone ($HOOKBACK_CACHE_DIR).
	CacheDir string
	// KubeVersion and KwokVersion pick the releases.
	KubeVersion, KwokVersion string
	// IndexURL, KwokReleasesURL and KubeReleaseURL are the release sources
	// (Fetcher).
	IndexURL, KwokReleasesURL, KubeReleaseURL string
	// FromSource builds from Go modules instead of downloading.
	FromSource bool
	// Dir, when set, holds binaries to use as they are (--binaries or
	// KUBEBUILDER_ASSETS): at least etcd, kube-apiserver and kubectl. kwok and
	// kwokctl come from the usual place when it lacks them.
	Dir string
	// Client is the HTTP client for downloads; nil means http.DefaultClient.
	Client *http.Client
	// Builder builds from source; nil means a GoBuilder writing to Notice.
	Builder Builder
	// Notice gets one line per decision (downloaded, reused, fell back).
	Notice io.Writer
}

func (o *BinaryOptions) fetcher() *Fetcher {
	client := o.Client
	if client == nil {
		client = defaultClient
	}
	return &Fetcher{Client: client, IndexURL: o.IndexURL, KwokReleasesURL: o.KwokReleasesURL, KubeReleaseURL: o.KubeReleaseURL}
}

func (o *BinaryOptions) notice(format string, args ...any) {
	if o.Notice != nil {
		fmt.Fprintf(o.Notice, format+"\n", args...)
	}
}

func (o *BinaryOptions) builder() Builder {
	if o.Builder != nil {
		return o.Builder
	}
	return &GoBuilder{Progress: o.Notice}
}

// defaultClient bounds what a dead network costs: a release source that
// does not connect or answer in time counts as unreachable. No overall
// timeout: an archive on a slow link takes what it takes.
var defaultClient = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 15 * time.Second}).DialContext,
	TLSHandshakeTimeout:   15 * time.Second,
	ResponseHeaderTimeout: 30 * time.Second,
}}

// ReleaseDir is where a downloaded artifact set is unpacked in cacheDir:
// one directory per artifact, version and platform.
func ReleaseDir(cacheDir, artifact, version string) string {
	goos, goarch := platform()
	return filepath.Join(cacheDir, "cluster-release", fmt.Sprintf("%s-%s-%s-%s", artifact, version, goos, goarch))
}

// Resolve finds or makes the binaries: from o.Dir as they are, built from
// source (o.FromSource), or else from the cache: release binaries downloaded
// earlier, then a complete source build of the same versions, and only when
// neither is there downloaded (each artifact once, whoever asks at the same
// time). When a release source cannot be reached it builds from source
// instead and says so in one line; a checksum mismatch is an error, never a
// fallback.
func Resolve(ctx context.Context, o BinaryOptions) (Binaries, error) {
	if o.FromSource {
		return fromSource(ctx, o, allNames, "built from source")
	}
	if o.Dir != "" {
		return fromDir(ctx, o)
	}
	if !releasesCached(o) && hasAll(SourceDir(o.CacheDir, o.KubeVersion, o.KwokVersion), allNames) {
		return fromSource(ctx, o, allNames, "built from source earlier")
	}
	b, err := downloaded(ctx, o)
	if errors.Is(err, ErrUnreachable) {
		o.notice("release binaries cannot be downloaded (%v): building them from source instead", err)
		return fromSource(ctx, o, allNames, "built from source (release binaries unreachable)")
	}
	return b, err
}

// releasesCached reports whether every release set is in the cache.
func releasesCached(o BinaryOptions) bool {
	ok := hasAll(ReleaseDir(o.CacheDir, "envtest", o.KubeVersion), envtestNames) && hasAll(ReleaseDir(o.CacheDir, "kwok", o.KwokVersion), kwokNames)
	if goos, _ := platform(); goos == "linux" {
		ok = ok && hasAll(ReleaseDir(o.CacheDir, "kube", o.KubeVersion), kubeNames)
	}
	return ok
}

// downloaded installs (once) and returns the release binaries.
func downloaded(ctx context.Context, o BinaryOptions) (Binaries, error) {
	f := o.fetcher()
	envtest := ReleaseDir(o.CacheDir, "envtest", o.KubeVersion)
	kwok := ReleaseDir(o.CacheDir, "kwok", o.KwokVersion)
	steps := []struct {
		what, dir string
		fill      func(context.Context, string, string) error
		version   string
	}{
		{"etcd, kube-apiserver, kubectl (envtest " + o.KubeVersion + ")", envtest, f.fetchEnvtest, o.KubeVersion},
		{"kwok, kwokctl " + o.KwokVersion, kwok, f.fetchKwok, o.KwokVersion},
	}
	kube := ReleaseDir(o.CacheDir, "kube", o.KubeVersion)
	goos, _ := platform()
	// dl.k8s.io publishes the control plane binaries for Linux only.
	if goos == "linux" {
		steps = append(steps, struct {
			what, dir string
			fill      func(context.Context, string, string) error
			version   string
		}{"kube-controller-manager, kube-scheduler " + o.KubeVersion, kube, f.fetchKube, o.KubeVersion})
	}
	for _, s := range steps {
		installed, err := installDir(ctx, s.dir, func(tmp string) error { return s.fill(ctx, s.version, tmp) })
		if err != nil {
			return Binaries{}, err
		}
		if installed {
			o.notice("downloaded and verified %s into %s", s.what, s.dir)
		}
	}
	b := Binaries{
		Etcd: filepath.Join(envtest, Etcd), KubeAPIServer: filepath.Join(envtest, KubeAPIServer), Kubectl: filepath.Join(envtest, Kubectl),
		Kwok: filepath.Join(kwok, Kwok), Kwokctl: filepath.Join(kwok, Kwokctl),
		Origin: "release binaries in " + filepath.Join(o.CacheDir, "cluster-release"),
	}
	if goos == "linux" {
		b.KubeControllerManager, b.KubeScheduler = filepath.Join(kube, KubeControllerManager), filepath.Join(kube, KubeScheduler)
	}
	return b, b.check()
}

// fromSource builds what is missing of names into SourceDir, under its lock.
func fromSource(ctx context.Context, o BinaryOptions, names []string, origin string) (Binaries, error) {
	if o.KubeVersion != DefaultKubeVersion || o.KwokVersion != DefaultKwokVersion {
		return Binaries{}, fmt.Errorf("building from source makes Kubernetes %s and kwok %s only (the versions of hookback's build module), not %s and %s: pick those versions or download release binaries",
			DefaultKubeVersion, DefaultKwokVersion, o.KubeVersion, o.KwokVersion)
	}
	dir := SourceDir(o.CacheDir, o.KubeVersion, o.KwokVersion)
	lock, err := lockFile(ctx, dir+".lock")
	if err != nil {
		return Binaries{}, err
	}
	defer lock.unlock()
	var missing []string
	for _, n := range names {
		if !isExecutable(filepath.Join(dir, n)) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return Binaries{}, err
		}
		// Build into a temporary directory, then move each binary in: an
		// interrupted build never leaves a half-written binary behind.
		tmp, err := os.MkdirTemp(dir, ".build.")
		if err != nil {
			return Binaries{}, err
		}
		defer os.RemoveAll(tmp)
		if err := o.builder().Build(ctx, tmp, missing); err != nil {
			return Binaries{}, err
		}
		for _, n := range missing {
			if err := os.Rename(filepath.Join(tmp, n), filepath.Join(dir, n)); err != nil {
				return Binaries{}, fmt.Errorf("install %s: %w", n, err)
			}
		}
		o.notice("built %s into %s", strings.Join(missing, ", "), dir)
	}
	b := Binaries{Origin: origin + " in " + dir}
	for _, n := range names {
		b.set(n, filepath.Join(dir, n))
	}
	return b, nil
}

// fromDir takes what o.Dir has, as it is; kwok and kwokctl, when missing,
// come from kwok's release (or source, when it cannot be reached).
func fromDir(ctx context.Context, o BinaryOptions) (Binaries, error) {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return Binaries{}, err
	}
	b := Binaries{Origin: "binaries in " + dir}
	for _, n := range allNames {
		if isExecutable(filepath.Join(dir, n)) {
			b.set(n, filepath.Join(dir, n))
		}
	}
	if b.Etcd == "" || b.KubeAPIServer == "" || b.Kubectl == "" {
		return Binaries{}, fmt.Errorf("%s must hold etcd, kube-apiserver and kubectl (as setup-envtest installs them): %w", dir, b.check())
	}
	if b.Kwok == "" || b.Kwokctl == "" {
		kw := ReleaseDir(o.CacheDir, "kwok", o.KwokVersion)
		installed, err := installDir(ctx, kw, func(tmp string) error { return o.fetcher().fetchKwok(ctx, o.KwokVersion, tmp) })
		switch {
		case errors.Is(err, ErrUnreachable):
			o.notice("kwok's release cannot be downloaded (%v): building kwok from source instead", err)
			src, err := fromSource(ctx, o, kwokNames, "")
			if err != nil {
				return Binaries{}, err
			}
			b.Kwok, b.Kwokctl = src.Kwok, src.Kwokctl
		case err != nil:
			return Binaries{}, err
		default:
			if installed {
				o.notice("downloaded and verified kwok, kwokctl %s into %s", o.KwokVersion, kw)
			}
			b.Kwok, b.Kwokctl = filepath.Join(kw, Kwok), filepath.Join(kw, Kwokctl)
		}
	}
	return b, b.check()
}

func (b *Binaries) set(name, path string) {
	switch name {
	case Etcd:
		b.Etcd = path
	case KubeAPIServer:
		b.KubeAPIServer = path
	case Kubectl:
		b.Kubectl = path
	case Kwok:
		b.Kwok = path
	case Kwokctl:
		b.Kwokctl = path
	case KubeControllerManager:
		b.KubeControllerManager = path
	case KubeScheduler:
		b.KubeScheduler = path
	}
}

// check reports the required binaries that are missing or not executable.
func (b Binaries) check() error {
	var missing []string
	for name, p := range map[string]string{Etcd: b.Etcd, KubeAPIServer: b.KubeAPIServer, Kubectl: b.Kubectl, Kwok: b.Kwok, Kwokctl: b.Kwokctl} {
		if p == "" || !isExecutable(p) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("missing binaries: %s", strings.Join(missing, ", "))
	}
	return nil
}

// HasControllers reports whether kube-controller-manager and kube-scheduler
// are there: without them no Deployment makes pods and no namespace gets its
// default ServiceAccount.
func (b Binaries) HasControllers() bool {
	return b.KubeControllerManager != "" && b.KubeScheduler != ""
}
