package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/hookback/hookback/field"
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
	// TrustDelay is how long a new CA is published before the certificate
	// it signs is served; zero means 2 s.
	TrustDelay time.Duration
	Log        *slog.Logger
}

// FileCerts serves a certificate from files and reloads it when they change.
// The pair lives in a certmagic cache as an unmanaged certificate: a new pair
// is added before the old one is removed, so no handshake finds none.
//
// A new certificate signed by a CA the apiserver does not trust yet (the CA
// file changed too) is not served at once: the caBundle first becomes old
// CA plus new CA, and only once the session reports that bundle applied
// (Applied) and TrustDelay has passed is the new pair served and the old CA
// dropped. So a CA rotation fails no admission.
type FileCerts struct {
	opts   FileTLSOptions
	cache  *certmagic.Cache
	config *certmagic.Config

	mu       sync.Mutex
	hash     string
	caBundle string
	// caPEM is the CA of the served pair; pending, a pair waiting for the
	// apiserver to trust its CA.
	caPEM   []byte
	pending *filePair
	changed chan<- struct{}
	// applied is the caBundle the session last reported written.
	applied string
	// trust is the timer that serves a staged pair; Stop stops it, so no
	// swap happens into a stopped cache.
	trust   *time.Timer
	stopped bool
}

var _ Staged = (*FileCerts)(nil)

// filePair is what the files held at one read.
type filePair struct {
	cert, key, caPEM []byte
	// union is the caBundle trusting both the served and this pair's CA.
	union string
}

// NewFileCerts loads the files once; a bad pair, or one the CA file does not
// sign, is an error here, and only a warning on later reloads (the previous
// pair keeps serving).
func NewFileCerts(ctx context.Context, opts FileTLSOptions) (*FileCerts, error) {
	f := &FileCerts{opts: opts}
	if f.opts.TrustDelay <= 0 {
		f.opts.TrustDelay = 2 * time.Second
	}
	f.cache, f.config = newCertmagic(opts.Log, 0, certmagic.Config{DefaultServerName: opts.Host})
	if err := f.reload(ctx); err != nil {
		f.cache.Stop()
		return nil, err
	}
	return f, nil
}

// read reads and checks the files.
func (f *FileCerts) read() (*filePair, error) {
	cert, err := os.ReadFile(f.opts.CertFile)
	if err != nil {
		return nil, field.Advise("certs.Options.CertFile", "read {certs.Options.CertFile}: %w", err)
	}
	key, err := os.ReadFile(f.opts.KeyFile)
	if err != nil {
		return nil, field.Advise("certs.Options.KeyFile", "read {certs.Options.KeyFile}: %w", err)
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("load %s and %s: %w", f.opts.CertFile, f.opts.KeyFile, err)
	}
	p := &filePair{cert: cert, key: key}
	if f.opts.CAFile == "" {
		return p, nil
	}
	if p.caPEM, err = os.ReadFile(f.opts.CAFile); err != nil {
		return nil, field.Advise("certs.Options.CAFile", "read {certs.Options.CAFile}: %w", err)
	}
	if err := verifyChain(pair, p.caPEM); err != nil {
		return nil, field.Advise("certs.Options.CAFile", "%s is not signed by {certs.Options.CAFile} %s, so the apiserver would refuse it: %w", f.opts.CertFile, f.opts.CAFile, err)
	}
	return p, nil
}

// reload reads the files and serves them, or stages them when the
// apiserver does not trust their CA yet.
func (f *FileCerts) reload(ctx context.Context) error {
	p, err := f.read()
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.hash == "" || f.opts.CAFile == "" || bytes.Equal(p.caPEM, f.caPEM) || trusts(f.applied, p):
		f.pending = nil
		return f.serve(ctx, p, base64.StdEncoding.EncodeToString(p.caPEM))
	case f.pending != nil && bytes.Equal(p.caPEM, f.pending.caPEM):
		// Another write of the staged files: still waiting for the same CA.
		f.pending.cert, f.pending.key = p.cert, p.key
		return nil
	}
	p.union = base64.StdEncoding.EncodeToString(append(append(bytes.TrimRight(f.caPEM, "\n"), '\n'), p.caPEM...))
	f.pending, f.caBundle = p, p.union
	f.opts.Log.Info("new CA in the CA file: publishing old and new CA before serving the new certificate", "ca", f.opts.CAFile)
	return nil
}

// serve puts p in the cache, drops the previous pair and publishes bundle.
// f.mu is held.
func (f *FileCerts) serve(ctx context.Context, p *filePair, bundle string) error {
	hash, err := f.config.CacheUnmanagedCertificatePEMBytes(ctx, p.cert, p.key, nil)
	if err != nil {
		return fmt.Errorf("cache certificate %s: %w", f.opts.CertFile, err)
	}
	old := f.hash
	f.hash, f.caPEM = hash, p.caPEM
	if f.opts.CAFile == "" {
		bundle = ""
	}
	f.caBundle = bundle
	if old != "" && old != hash {
		f.cache.Remove([]string{old})
	}
	return nil
}

// Applied serves a staged pair once the bundle that trusts it is applied,
// after TrustDelay: the apiserver learns of a configuration change through
// its own watch. The narrowed caBundle is then reported as a change.
func (f *FileCerts) Applied(caBundle string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = caBundle
	p := f.pending
	if p == nil || caBundle != p.union || f.stopped {
		return
	}
	if f.trust != nil {
		f.trust.Stop()
	}
	f.trust = time.AfterFunc(f.opts.TrustDelay, func() {
		f.mu.Lock()
		if f.pending != p || f.stopped {
			f.mu.Unlock()
			return // replaced by a newer read meanwhile, or stopped
		}
		f.pending = nil
		err := f.serve(context.Background(), p, base64.StdEncoding.EncodeToString(p.caPEM))
		changed := f.changed
		f.mu.Unlock()
		if err != nil {
			f.opts.Log.Warn("staged certificate not served; the previous one keeps serving", "error", err)
			return
		}
		f.opts.Log.Info("serving the certificate of the new CA; dropping the old CA from the caBundle", "cert", f.opts.CertFile)
		if changed != nil {
			trySend(changed)
		}
	})
}

// verifyChain checks that pair's leaf chains to a CA in caPEM, with the
// pair's other certificates as intermediates.
func verifyChain(pair tls.Certificate, caPEM []byte) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return errors.New("no PEM certificate in the CA file")
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return err
	}
	inter := x509.NewCertPool()
	for _, der := range pair.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err
}

// trusts reports whether the published bundle already trusts p.
func trusts(bundle string, p *filePair) bool {
	caPEM, err := base64.StdEncoding.DecodeString(bundle)
	if err != nil || len(caPEM) == 0 {
		return false
	}
	pair, err := tls.X509KeyPair(p.cert, p.key)
	return err == nil && verifyChain(pair, caPEM) == nil
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
	f.mu.Lock()
	f.changed = changed
	f.mu.Unlock()
	w, err := reload.New(reload.Options{Files: files, Interval: f.opts.Interval, Debounce: 50 * time.Millisecond, Log: f.opts.Log,
		OnChange: func(ctx context.Context) {
			if err := f.reload(ctx); err != nil {
				f.opts.Log.Warn("certificate files not reloaded; the previous certificate keeps serving", "error", err)
				return
			}
			f.opts.Log.Info("certificate files reloaded", "cert", f.opts.CertFile)
			trySend(changed)
		}})
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Start(ctx)
	}()
	return func() { <-done }, nil
}

// Stop ends the cache's maintenance.
func (f *FileCerts) Stop() {
	f.mu.Lock()
	f.stopped = true
	if f.trust != nil {
		f.trust.Stop()
	}
	f.mu.Unlock()
	f.cache.Stop()
}
