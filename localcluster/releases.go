package localcluster

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/hookback/hookback/field"
)

// EnvtestIndex is setup-envtest's release index (controller-runtime
// tools/setup-envtest/remote.Index):
//
//	releases:
//	  v1.36.3:
//	    envtest-v1.36.3-linux-amd64.tar.gz:
//	      hash: <sha512 hex>
//	      selfLink: <URL of the archive>
type EnvtestIndex struct {
	Releases map[string]map[string]EnvtestArchive `json:"releases"`
}

// EnvtestArchive is one archive of the index.
type EnvtestArchive struct {
	Hash     string `json:"hash"`
	SelfLink string `json:"selfLink"`
}

// EnvtestArchiveName is the index's name of the archive for a version and platform.
func EnvtestArchiveName(version, goos, goarch string) string {
	return fmt.Sprintf("envtest-%s-%s-%s.tar.gz", version, goos, goarch)
}

// fetchEnvtest fills dir with etcd, kube-apiserver and kubectl from the
// index's archive for version.
func (f *Fetcher) fetchEnvtest(ctx context.Context, version, dir string) error {
	b, err := f.getSmall(ctx, f.IndexURL)
	if err != nil {
		return fmt.Errorf("release index: %w", err)
	}
	var idx EnvtestIndex
	if err := yaml.Unmarshal(b, &idx); err != nil {
		return fmt.Errorf("release index %s: %w", f.IndexURL, err)
	}
	goos, goarch := f.platform()
	name := EnvtestArchiveName(version, goos, goarch)
	a, ok := idx.Releases[version][name]
	if !ok || a.SelfLink == "" || a.Hash == "" {
		return field.Advise("localcluster.BinaryOptions.KubeVersion", "release index %s has no %s: pick another {localcluster.BinaryOptions.KubeVersion}, or build from source ({localcluster.BinaryOptions.FromSource})", f.IndexURL, name)
	}
	archive := filepath.Join(dir, name)
	if err := f.download(ctx, a.SelfLink, archive, digest{algo: "sha512", hex: a.Hash}); err != nil {
		return err
	}
	defer os.Remove(archive)
	return extractTarGz(archive, dir, envtestNames)
}

// extractTarGz writes the regular files of archive whose base names are in
// names into dir (flat: the envtest archive keeps them under
// controller-tools/envtest/), and fails unless every name was found.
func extractTarGz(archive, dir string, names []string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("unpack %s: %w", filepath.Base(archive), err)
	}
	tr := tar.NewReader(zr)
	found := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("unpack %s: %w", filepath.Base(archive), err)
		}
		base := path.Base(hdr.Name)
		if hdr.Typeflag != tar.TypeReg || !slices.Contains(names, base) || found[base] {
			continue
		}
		if err := writeExecutable(filepath.Join(dir, base), tr, hdr.Size); err != nil {
			return fmt.Errorf("unpack %s: %w", filepath.Base(archive), err)
		}
		found[base] = true
	}
	for _, n := range names {
		if !found[n] {
			return fmt.Errorf("unpack %s: it holds no %s", filepath.Base(archive), n)
		}
	}
	return nil
}

func writeExecutable(dst string, r io.Reader, size int64) error {
	if size < 0 || size > maxArtifact {
		return fmt.Errorf("%s: size %d out of range", filepath.Base(dst), size)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(out, r, size); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// fetchKube fills dir with kube-controller-manager and kube-scheduler from
// dl.k8s.io's layout, each checked against the .sha512 file beside it.
func (f *Fetcher) fetchKube(ctx context.Context, version, dir string) error {
	goos, goarch := f.platform()
	for _, name := range kubeNames {
		url := fmt.Sprintf("%s/%s/bin/%s/%s/%s", strings.TrimRight(f.KubeReleaseURL, "/"), version, goos, goarch, name)
		sum, err := f.getSmall(ctx, url+".sha512")
		if err != nil {
			return fmt.Errorf("%s checksum: %w", name, err)
		}
		fields := strings.Fields(string(sum))
		if len(fields) == 0 {
			return fmt.Errorf("%s.sha512 is empty", url)
		}
		if err := f.download(ctx, url, filepath.Join(dir, name), digest{algo: "sha512", hex: fields[0]}); err != nil {
			return err
		}
		if err := os.Chmod(filepath.Join(dir, name), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// GitHubRelease is the part of the GitHub releases API's answer read here:
// each asset's name, download URL and the digest GitHub computed when it was
// uploaded ("sha256:<hex>"). kwok publishes no checksum file of its own.
type GitHubRelease struct {
	TagName string        `json:"tag_name"`
	Assets  []GitHubAsset `json:"assets"`
}

// GitHubAsset is one file of a release.
type GitHubAsset struct {
	Name               string `json:"name"`
	BrowserDownloadURL string `json:"browser_download_url"`
	Digest             string `json:"digest"`
}

// fetchKwok fills dir with kwok and kwokctl from kwok's release (assets
// kwok-OS-ARCH and kwokctl-OS-ARCH).
func (f *Fetcher) fetchKwok(ctx context.Context, version, dir string) error {
	url := strings.TrimRight(f.KwokReleasesURL, "/") + "/tags/" + version
	b, err := f.getSmall(ctx, url)
	if err != nil {
		return fmt.Errorf("kwok release: %w", err)
	}
	var rel GitHubRelease
	if err := json.Unmarshal(b, &rel); err != nil {
		return fmt.Errorf("kwok release %s: %w", url, err)
	}
	goos, goarch := f.platform()
	for _, name := range kwokNames {
		asset := fmt.Sprintf("%s-%s-%s", name, goos, goarch)
		i := slices.IndexFunc(rel.Assets, func(a GitHubAsset) bool { return a.Name == asset })
		if i < 0 {
			return fmt.Errorf("kwok release %s has no asset %s", url, asset)
		}
		a := rel.Assets[i]
		algo, hexsum, ok := strings.Cut(a.Digest, ":")
		if !ok || algo != "sha256" || hexsum == "" {
			return field.Advise("localcluster.BinaryOptions.FromSource", "kwok release %s: asset %s has no sha256 digest (%q): refusing to run an unchecked binary; build from source ({localcluster.BinaryOptions.FromSource})", url, asset, a.Digest)
		}
		if err := f.download(ctx, a.BrowserDownloadURL, filepath.Join(dir, name), digest{algo: algo, hex: hexsum}); err != nil {
			return err
		}
		if err := os.Chmod(filepath.Join(dir, name), 0o755); err != nil {
			return err
		}
	}
	return nil
}
