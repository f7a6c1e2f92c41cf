package localcluster

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// Sentinel errors.
var (
	// ErrChecksum: a downloaded artifact is not the one its publisher's digest
	// names. Never a reason to fall back: someone or something changed it.
	ErrChecksum = errors.New("localcluster: checksum mismatch")
	// ErrUnreachable: a release source could not be reached (no network, a
	// proxy refusing it, an error status); Resolve builds from source instead.
	ErrUnreachable = errors.New("localcluster: release source unreachable")
)

// Size limits: what a release source may send (far above real sizes: the
// envtest archive is ~90 MB, kube-apiserver ~100 MB) so a broken or hostile
// server cannot fill the disk or the memory.
const (
	maxSmall    = 16 << 20 // an index, a release's JSON, a .sha512 file
	maxArtifact = 2 << 30  // an archive or a binary
)

// Fetcher downloads release artifacts and checks each against its published
// digest before anything else reads it.
type Fetcher struct {
	Client *http.Client
	// IndexURL is setup-envtest's release index (YAML).
	IndexURL string
	// KwokReleasesURL is a GitHub releases API for kwok; KwokReleasesURL +
	// "/tags/" + version is the release JSON.
	KwokReleasesURL string
	// KubeReleaseURL serves VERSION/bin/OS/ARCH/NAME and NAME.sha512.
	KubeReleaseURL string
	// OS and Arch select the artifacts; empty means this machine's.
	OS, Arch string
}

func (f *Fetcher) platform() (string, string) {
	goos, goarch := platform()
	if f.OS != "" {
		goos = f.OS
	}
	if f.Arch != "" {
		goarch = f.Arch
	}
	return goos, goarch
}

func (f *Fetcher) client() *http.Client {
	if f.Client != nil {
		return f.Client
	}
	return http.DefaultClient
}

// open GETs url; a transport error or a status other than 200 is ErrUnreachable.
func (f *Fetcher) open(ctx context.Context, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", url, err)
	}
	resp, err := f.client().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("get %s: %w", url, ctx.Err())
		}
		return nil, fmt.Errorf("%w: get %s: %w", ErrUnreachable, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: get %s: %s", ErrUnreachable, url, resp.Status)
	}
	return resp.Body, nil
}

// getSmall reads a small document (an index, a digest file) whole.
func (f *Fetcher) getSmall(ctx context.Context, url string) ([]byte, error) {
	body, err := f.open(ctx, url)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, maxSmall+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrUnreachable, url, err)
	}
	if len(b) > maxSmall {
		return nil, fmt.Errorf("read %s: larger than %d bytes", url, maxSmall)
	}
	return b, nil
}

// digest is a published checksum: algorithm and lowercase hex.
type digest struct {
	algo, hex string
}

func (d digest) hash() (hash.Hash, error) {
	switch d.algo {
	case "sha512":
		return sha512.New(), nil
	case "sha256":
		return sha256.New(), nil
	}
	return nil, fmt.Errorf("unsupported digest algorithm %q", d.algo)
}

// download writes url's body to path and checks it against want. On any
// error path is removed: a file that was not verified is never left behind.
func (f *Fetcher) download(ctx context.Context, url, path string, want digest) (err error) {
	h, err := want.hash()
	if err != nil {
		return fmt.Errorf("download %s: %w", url, err)
	}
	body, err := f.open(ctx, url)
	if err != nil {
		return err
	}
	defer body.Close()
	out, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("download %s: %w", url, err)
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("download %s: %w", url, cerr)
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(body, maxArtifact+1))
	if err != nil {
		return fmt.Errorf("%w: download %s: %w", ErrUnreachable, url, err)
	}
	if n > maxArtifact {
		return fmt.Errorf("download %s: larger than %d bytes", url, int64(maxArtifact))
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, want.hex) {
		return fmt.Errorf("%w: %s (%s): expected %s %s, got %s: refusing it; nothing was installed",
			ErrChecksum, filepath.Base(path), url, want.algo, strings.ToLower(want.hex), got)
	}
	return nil
}
