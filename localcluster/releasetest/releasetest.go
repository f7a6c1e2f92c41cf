// Package releasetest serves, on loopback, the release artifacts that
// localcluster downloads, in their real formats, packed from binaries built
// here: setup-envtest's index (YAML, sha512) with an envtest archive of etcd,
// kube-apiserver and kubectl; dl.k8s.io's layout for kube-controller-manager
// and kube-scheduler with a .sha512 file beside each; and a GitHub release
// (JSON with each asset's sha256 digest) for kwok and kwokctl. Tests and the
// benchmark program use it where no release can be downloaded.
package releasetest

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"sigs.k8s.io/yaml"

	"github.com/hookback/hookback/localcluster"
)

// Options say what to serve.
type Options struct {
	// BinDir holds the seven binaries (hack/cluster's source build).
	BinDir string
	// KubeVersion and KwokVersion name the release.
	KubeVersion, KwokVersion string
	// OS and Arch name the platform (this machine's, usually).
	OS, Arch string
	// TamperEnvtest serves an envtest archive with one byte changed under
	// the index's hash of the real one.
	TamperEnvtest bool
	// WorkDir holds the packed artifacts; empty means a temporary directory
	// that Close removes.
	WorkDir string
}

// Server is a loopback release server.
type Server struct {
	IndexURL, KwokReleasesURL, KubeReleaseURL string

	srv     *http.Server
	ln      net.Listener
	work    string
	ownWork bool
	files   map[string]string // URL path -> file
	mu      sync.Mutex
	gets    map[string]int
}

// Start packs the artifacts and serves them on 127.0.0.1.
func Start(o Options) (*Server, error) {
	s := &Server{files: map[string]string{}, gets: map[string]int{}, work: o.WorkDir}
	if s.work != "" {
		if err := os.MkdirAll(s.work, 0o755); err != nil {
			return nil, err
		}
	} else {
		d, err := os.MkdirTemp("", "hookback-releases-")
		if err != nil {
			return nil, err
		}
		s.work, s.ownWork = d, true
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.cleanup()
		return nil, err
	}
	s.ln = ln
	base := "http://" + ln.Addr().String()
	s.IndexURL = base + "/envtest-releases.yaml"
	s.KwokReleasesURL = base + "/repos/kubernetes-sigs/kwok/releases"
	s.KubeReleaseURL = base + "/release"
	if err := s.pack(o, base); err != nil {
		ln.Close()
		s.cleanup()
		return nil, err
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go s.srv.Serve(ln) //nolint:errcheck // ErrServerClosed at Close
	return s, nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	f, ok := s.files[r.URL.Path]
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	s.gets[r.URL.Path]++
	s.mu.Unlock()
	http.ServeFile(w, r, f)
}

// Gets is how many times path (such as "/envtest-releases.yaml" or an
// archive's path) was fetched.
func (s *Server) Gets(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets[path]
}

// ArtifactGets is how many artifacts (archives and binaries, not indexes or
// digest files) were fetched in all.
func (s *Server) ArtifactGets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for p, c := range s.gets {
		if filepath.Ext(p) != ".yaml" && filepath.Ext(p) != ".sha512" && filepath.Base(filepath.Dir(p)) != "tags" {
			n += c
		}
	}
	return n
}

// EnvtestPath is the URL path of the envtest archive.
func (s *Server) EnvtestPath(o Options) string {
	return "/archives/" + localcluster.EnvtestArchiveName(o.KubeVersion, o.OS, o.Arch)
}

// Close stops serving and removes what Start packed.
func (s *Server) Close() error {
	err := s.srv.Close()
	s.cleanup()
	return err
}

func (s *Server) cleanup() {
	if s.ownWork {
		os.RemoveAll(s.work)
	}
}

func (s *Server) pack(o Options, base string) error {
	// The envtest archive and its index entry.
	name := localcluster.EnvtestArchiveName(o.KubeVersion, o.OS, o.Arch)
	archive := filepath.Join(s.work, name)
	if err := packEnvtest(archive, o.BinDir); err != nil {
		return err
	}
	sum, err := fileSum(archive, sha512.New())
	if err != nil {
		return err
	}
	served := archive
	if o.TamperEnvtest {
		served = archive + ".tampered"
		if err := tamperedCopy(archive, served); err != nil {
			return err
		}
	}
	s.files["/archives/"+name] = served
	idx := localcluster.EnvtestIndex{Releases: map[string]map[string]localcluster.EnvtestArchive{
		o.KubeVersion: {name: {Hash: sum, SelfLink: base + "/archives/" + name}},
	}}
	if err := s.writeServed("/envtest-releases.yaml", idx, true); err != nil {
		return err
	}
	// kube-controller-manager and kube-scheduler, dl.k8s.io's layout.
	for _, n := range []string{localcluster.KubeControllerManager, localcluster.KubeScheduler} {
		p := fmt.Sprintf("/release/%s/bin/%s/%s/%s", o.KubeVersion, o.OS, o.Arch, n)
		src := filepath.Join(o.BinDir, n)
		sum, err := fileSum(src, sha512.New())
		if err != nil {
			return err
		}
		s.files[p] = src
		sumFile := filepath.Join(s.work, n+".sha512")
		if err := os.WriteFile(sumFile, []byte(sum), 0o644); err != nil {
			return err
		}
		s.files[p+".sha512"] = sumFile
	}
	// kwok's GitHub release.
	rel := localcluster.GitHubRelease{TagName: o.KwokVersion}
	for _, n := range []string{localcluster.Kwok, localcluster.Kwokctl} {
		asset := fmt.Sprintf("%s-%s-%s", n, o.OS, o.Arch)
		p := "/kubernetes-sigs/kwok/releases/download/" + o.KwokVersion + "/" + asset
		src := filepath.Join(o.BinDir, n)
		sum, err := fileSum(src, sha256.New())
		if err != nil {
			return err
		}
		s.files[p] = src
		rel.Assets = append(rel.Assets, localcluster.GitHubAsset{Name: asset, BrowserDownloadURL: base + p, Digest: "sha256:" + sum})
	}
	return s.writeServed("/repos/kubernetes-sigs/kwok/releases/tags/"+o.KwokVersion, rel, false)
}

func (s *Server) writeServed(path string, v any, asYAML bool) error {
	b, err := json.Marshal(v)
	if err == nil && asYAML {
		b, err = yaml.JSONToYAML(b)
	}
	if err != nil {
		return err
	}
	f := filepath.Join(s.work, filepath.Base(path)+".doc")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		return err
	}
	s.files[path] = f
	return nil
}

// packEnvtest writes the archive as the envtest releases lay it out:
// controller-tools/envtest/{etcd,kube-apiserver,kubectl}.
func packEnvtest(dst, binDir string) (err error) {
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	zw, err := gzip.NewWriterLevel(out, gzip.BestSpeed)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	for _, n := range []string{localcluster.Etcd, localcluster.KubeAPIServer, localcluster.Kubectl} {
		if err := addFile(tw, filepath.Join(binDir, n), "controller-tools/envtest/"+n); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

func addFile(tw *tar.Writer, src, name string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: st.Size(), Typeflag: tar.TypeReg, ModTime: st.ModTime()}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

func fileSum(path string, h interface {
	io.Writer
	Sum([]byte) []byte
}) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// tamperedCopy copies src with one byte in the middle flipped.
func tamperedCopy(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	b[len(b)/2] ^= 0xff
	return os.WriteFile(dst, b, 0o644)
}
