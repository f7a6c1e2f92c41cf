package localcluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/hookback/hookback/localcluster"
	"github.com/hookback/hookback/localcluster/releasetest"
)

// fakeBinaries writes a small executable for each of the seven binaries, so
// the release server packs and serves real archives without the real
// programs (the e2e tests use those).
func fakeBinaries(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range []string{localcluster.Etcd, localcluster.KubeAPIServer, localcluster.Kubectl, localcluster.KubeControllerManager,
		localcluster.KubeScheduler, localcluster.Kwok, localcluster.Kwokctl} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\necho "+n+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func serve(t *testing.T, o releasetest.Options) *releasetest.Server {
	t.Helper()
	if o.BinDir == "" {
		o.BinDir = fakeBinaries(t)
	}
	o.KubeVersion, o.KwokVersion, o.OS, o.Arch = localcluster.DefaultKubeVersion, localcluster.DefaultKwokVersion, runtime.GOOS, runtime.GOARCH
	s, err := releasetest.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// recordingBuilder stands in for GoBuilder (minutes of go build): it writes
// small executables and records what it was asked for.
type recordingBuilder struct {
	mu    sync.Mutex
	calls [][]string
}

func (b *recordingBuilder) Build(_ context.Context, dir string, names []string) error {
	b.mu.Lock()
	b.calls = append(b.calls, names)
	b.mu.Unlock()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			return err
		}
	}
	return nil
}

func options(s *releasetest.Server, cache string, notice *bytes.Buffer, b localcluster.Builder) localcluster.BinaryOptions {
	o := localcluster.BinaryOptions{
		CacheDir: cache, KubeVersion: localcluster.DefaultKubeVersion, KwokVersion: localcluster.DefaultKwokVersion,
		Builder: b,
	}
	if notice != nil {
		o.Notice = notice
	}
	if s != nil {
		o.IndexURL, o.KwokReleasesURL, o.KubeReleaseURL = s.IndexURL, s.KwokReleasesURL, s.KubeReleaseURL
	}
	return o
}

// leftovers lists what is in the release cache besides lock files.
func leftovers(t *testing.T, cache string) []string {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(cache, "cluster-release"))
	var out []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".lock") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestTamperedArchiveIsRefused(t *testing.T) {
	s := serve(t, releasetest.Options{TamperEnvtest: true})
	cache, builder := t.TempDir(), &recordingBuilder{}
	var notice bytes.Buffer
	_, err := localcluster.Resolve(context.Background(), options(s, cache, &notice, builder))
	if !errors.Is(err, localcluster.ErrChecksum) {
		t.Fatalf("Resolve = %v, want ErrChecksum", err)
	}
	for _, want := range []string{"expected sha512 ", ", got ", localcluster.EnvtestArchiveName(localcluster.DefaultKubeVersion, runtime.GOOS, runtime.GOARCH)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if len(builder.calls) != 0 {
		t.Errorf("a tampered archive made it build from source: %v", builder.calls)
	}
	if got := leftovers(t, cache); len(got) != 0 {
		t.Errorf("the cache holds %v after a refused archive; want nothing", got)
	}
}

func TestUnreachableIndexBuildsFromSource(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/envtest-releases.yaml"
	ln.Close()
	cache, builder := t.TempDir(), &recordingBuilder{}
	var notice bytes.Buffer
	o := options(nil, cache, &notice, builder)
	o.IndexURL, o.KwokReleasesURL, o.KubeReleaseURL = closed, closed, closed
	b, err := localcluster.Resolve(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(builder.calls) != 1 || len(builder.calls[0]) != 7 {
		t.Errorf("builder calls = %v, want one build of the seven binaries", builder.calls)
	}
	lines := strings.Split(strings.TrimSpace(notice.String()), "\n")
	if !strings.Contains(lines[0], "cannot be downloaded") || !strings.Contains(lines[0], "building them from source instead") || !strings.Contains(lines[0], closed) {
		t.Errorf("first notice %q does not say the index was unreachable and what happens instead", lines[0])
	}
	src := localcluster.SourceDir(cache, localcluster.DefaultKubeVersion, localcluster.DefaultKwokVersion)
	if filepath.Dir(b.KubeAPIServer) != src || !b.HasControllers() {
		t.Errorf("binaries = %+v, want all seven in %s", b, src)
	}
	// Built once: a second Resolve reuses them.
	if _, err := localcluster.Resolve(context.Background(), o); err != nil || len(builder.calls) != 1 {
		t.Errorf("second Resolve: err %v, builds %d; want the cached build", err, len(builder.calls))
	}
}

func TestConcurrentResolveDownloadsOnce(t *testing.T) {
	s := serve(t, releasetest.Options{})
	cache := t.TempDir()
	var wg sync.WaitGroup
	results := make([]localcluster.Binaries, 3)
	errs := make([]error, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = localcluster.Resolve(context.Background(), options(s, cache, nil, &recordingBuilder{}))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Resolve %d: %v", i, err)
		}
		if results[i] != results[0] {
			t.Errorf("Resolve %d = %+v, want %+v", i, results[i], results[0])
		}
	}
	// envtest archive, kwok and kwokctl, and on Linux kube-controller-manager and kube-scheduler.
	want := 3
	if runtime.GOOS == "linux" {
		want = 5
	}
	if got := s.ArtifactGets(); got != want {
		t.Errorf("%d artifacts downloaded, want %d (each once)", got, want)
	}
	index := s.Gets("/envtest-releases.yaml")
	if _, err := localcluster.Resolve(context.Background(), options(s, cache, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if s.ArtifactGets() != want || s.Gets("/envtest-releases.yaml") != index {
		t.Errorf("a Resolve from the cache went to the network: artifacts %d, index %d -> %d", s.ArtifactGets(), index, s.Gets("/envtest-releases.yaml"))
	}
	b := results[0]
	out, err := os.ReadFile(b.KubeAPIServer)
	if err != nil || !strings.Contains(string(out), "kube-apiserver") {
		t.Errorf("unpacked kube-apiserver = %q, %v", out, err)
	}
}

func TestBinariesDirIsUsedAsItIs(t *testing.T) {
	s := serve(t, releasetest.Options{})
	dir := t.TempDir()
	for _, n := range []string{localcluster.Etcd, localcluster.KubeAPIServer, localcluster.Kubectl} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	o := options(s, t.TempDir(), nil, &recordingBuilder{})
	o.Dir = dir
	b, err := localcluster.Resolve(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if b.KubeAPIServer != filepath.Join(dir, localcluster.KubeAPIServer) || b.HasControllers() {
		t.Errorf("binaries = %+v, want the directory's, without controllers", b)
	}
	if s.Gets(s.EnvtestPath(releasetest.Options{KubeVersion: localcluster.DefaultKubeVersion, OS: runtime.GOOS, Arch: runtime.GOARCH})) != 0 {
		t.Error("the envtest archive was downloaded though the directory has its binaries")
	}
	if !strings.Contains(b.Kwok, "cluster-release") {
		t.Errorf("kwok = %s, want kwok's release (the directory has none)", b.Kwok)
	}

	o.Dir = t.TempDir()
	_, err = localcluster.Resolve(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "must hold etcd, kube-apiserver and kubectl") {
		t.Errorf("an empty directory: %v, want an error naming what it must hold", err)
	}
}

func TestFromSourceOnlyBuildsThePinnedVersions(t *testing.T) {
	o := options(nil, t.TempDir(), nil, &recordingBuilder{})
	o.FromSource, o.KubeVersion = true, "v1.35.0"
	_, err := localcluster.Resolve(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), localcluster.DefaultKubeVersion) {
		t.Errorf("Resolve = %v, want an error naming the version the build module makes", err)
	}
}

func TestIndexWithoutTheVersion(t *testing.T) {
	s := serve(t, releasetest.Options{})
	o := options(s, t.TempDir(), nil, &recordingBuilder{})
	o.KubeVersion = "v1.99.0"
	_, err := localcluster.Resolve(context.Background(), o)
	want := fmt.Sprintf("has no %s", localcluster.EnvtestArchiveName("v1.99.0", runtime.GOOS, runtime.GOARCH))
	if err == nil || !strings.Contains(err.Error(), want) || errors.Is(err, localcluster.ErrUnreachable) {
		t.Errorf("Resolve = %v, want an error saying %q (not a fallback)", err, want)
	}
	if got := leftovers(t, o.CacheDir); len(got) != 0 {
		t.Errorf("cache holds %v, want nothing", got)
	}
}

// TestSourceBuildInTheCacheIsUsedFirst: a complete source build of the
// versions asked for is used as it is, without asking the network.
func TestSourceBuildInTheCacheIsUsedFirst(t *testing.T) {
	s := serve(t, releasetest.Options{})
	cache := t.TempDir()
	src := localcluster.SourceDir(cache, localcluster.DefaultKubeVersion, localcluster.DefaultKwokVersion)
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fakeBinaries(t), src); err != nil {
		t.Fatal(err)
	}
	builder := &recordingBuilder{}
	b, err := localcluster.Resolve(context.Background(), options(s, cache, nil, builder))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(b.Kwokctl) != src || len(builder.calls) != 0 || s.Gets("/envtest-releases.yaml") != 0 {
		t.Errorf("binaries %+v, builds %v, index fetched %d times; want the cached build, no build, no fetch",
			b, builder.calls, s.Gets("/envtest-releases.yaml"))
	}
}
