package certs

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/hookback/hookback/reload"
)

// Watch has nothing to watch: certmagic renews the leaf in the background
// and the CA never changes while running.
func (s *SelfSigned) Watch(context.Context, chan<- struct{}) (func(), error) { return nil, nil }

// FileTLSOptions names user-provided certificate files.
type FileTLSOptions struct {
	CertFile, KeyFile string
	// CAFile is the caBundle source; empty means the certificate is trusted
	// by the apiserver's system roots and caBundle stays empty.
	CAFile string
	// Host is the advertised name, served when a client sends no SNI.
	Host string
	// Interval is the backstop re-read period of the watched files.
	Interval time.Duration
	Log      *slog.Logger
}

// FileCerts serves a certificate from files and reloads it when they change.
// The pair lives in a certmagic cache as an unmanaged certificate: a new pair
// is added before the old one is removed, so no handshake finds none.
type FileCerts struct {
	opts   FileTLSOptions
	cache  *certmagic.Cache
	config *certmagic.Config

	mu       sync.Mutex
	hash     string
	caBundle string
}

// NewFileCerts loads the files once; a bad pair is an error here, and only a
// warning on later reloads (the previous pair keeps serving).
func NewFileCerts(ctx context.Context, opts FileTLSOptions) (*FileCerts, error) {
	f := &FileCerts{opts: opts}
	f.cache, f.config = newCertmagic(opts.Log, 0, certmagic.Config{DefaultServerName: opts.Host})
	if err := f.reload(ctx); err != nil {
		f.cache.Stop()
		return nil, err
	}
	return f, nil
}

func (f *FileCerts) reload(ctx context.Context) error {
	cert, err := os.ReadFile(f.opts.CertFile)
	if err != nil {
		return fmt.Errorf("read --tls-cert-file: %w", err)
	}
	key, err := os.ReadFile(f.opts.KeyFile)
	if err != nil {
		return fmt.Errorf("read --tls-key-file: %w", err)
	}
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		return fmt.Errorf("load %s and %s: %w", f.opts.CertFile, f.opts.KeyFile, err)
	}
	bundle, err := readCABundle(f.opts.CAFile)
	if err != nil {
		return err
	}
	hash, err := f.config.CacheUnmanagedCertificatePEMBytes(ctx, cert, key, nil)
	if err != nil {
		return fmt.Errorf("cache certificate %s: %w", f.opts.CertFile, err)
	}
	f.mu.Lock()
	old := f.hash
	f.hash, f.caBundle = hash, bundle
	f.mu.Unlock()
	if old != "" && old != hash {
		f.cache.Remove([]string{old})
	}
	return nil
}

// TLSConfig serves the current pair.
func (f *FileCerts) TLSConfig() *tls.Config {
	return servingTLS(f.config)
}

// CABundle is the base64 of --ca-file, or empty.
func (f *FileCerts) CABundle() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.caBundle
}

// Watch reloads the pair when any of the files changes and then reports on
// changed, so a new caBundle gets re-applied.
func (f *FileCerts) Watch(ctx context.Context, changed chan<- struct{}) (func(), error) {
	files := []string{f.opts.CertFile, f.opts.KeyFile}
	if f.opts.CAFile != "" {
		files = append(files, f.opts.CAFile)
	}
	raw := make(chan struct{}, 1)
	var waits []func()
	for _, path := range files {
		w := &reload.FileWatcher{Path: path, Interval: f.opts.Interval, Debounce: 50 * time.Millisecond, Log: f.opts.Log}
		wait, err := w.Watch(ctx, raw)
		if err != nil {
			return nil, err
		}
		waits = append(waits, wait)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-raw:
			}
			if err := f.reload(ctx); err != nil {
				f.opts.Log.Warn("certificate files not reloaded; the previous certificate keeps serving", "error", err)
				continue
			}
			f.opts.Log.Info("certificate files reloaded", "cert", f.opts.CertFile)
			trySend(changed)
		}
	}()
	return func() {
		for _, w := range waits {
			w()
		}
		<-done
	}, nil
}

// Stop ends the cache's maintenance.
func (f *FileCerts) Stop() { f.cache.Stop() }
