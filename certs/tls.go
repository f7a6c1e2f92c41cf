package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/caddyserver/certmagic"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// caIssuer is a certmagic Issuer backed by the local CA. It implements no
// PreChecker, so certmagic applies no public-CA rules and can manage an IP.
type caIssuer struct {
	ca       *CA
	lifetime time.Duration
}

var _ certmagic.Issuer = (*caIssuer)(nil)

func (i *caIssuer) Issue(_ context.Context, csr *x509.CertificateRequest) (*certmagic.IssuedCertificate, error) {
	pemChain, err := i.ca.Sign(csr, i.lifetime)
	if err != nil {
		return nil, err
	}
	return &certmagic.IssuedCertificate{Certificate: pemChain}, nil
}

// IssuerKey carries the CA's fingerprint: certmagic reloads stored leaves
// without checking them against the CA, so a new CA must not find the old
// CA's leaves under the same key.
func (i *caIssuer) IssuerKey() string { return "hookback-local-ca-" + i.ca.Fingerprint()[:16] }

// TLSOptions configures the self-signed serving certificate.
type TLSOptions struct {
	// StateDir holds the CA and certmagic's storage.
	StateDir string
	// Host is the advertised IP or DNS name the certificate must cover.
	Host string
	// Names are more names the certificate covers, each with its own leaf
	// (a Service's short and long DNS names).
	Names []string
	// CA issues the leaves; nil: the local CA in StateDir.
	CA *CA
	// LeafLifetime is how long a serving certificate lives; certmagic renews
	// it when a third is left.
	LeafLifetime time.Duration
	// RenewCheckInterval is how often certmagic looks for renewals; it must be
	// well under a third of LeafLifetime.
	RenewCheckInterval time.Duration
	Log                *slog.Logger
}

// SelfSigned manages a serving certificate issued by the local CA.
type SelfSigned struct {
	ca     *CA
	cache  *certmagic.Cache
	config *certmagic.Config
}

// NewSelfSigned loads or creates the CA and obtains (or loads) a leaf for
// opts.Host. Call Stop to end background renewal.
func NewSelfSigned(ctx context.Context, opts TLSOptions) (*SelfSigned, error) {
	if opts.LeafLifetime == 0 {
		opts.LeafLifetime = 7 * 24 * time.Hour
	}
	if opts.RenewCheckInterval == 0 {
		opts.RenewCheckInterval = time.Hour
	}
	ca := opts.CA
	if ca == nil {
		var err error
		if ca, err = LoadOrCreateCA(opts.StateDir, localCAName); err != nil {
			return nil, err
		}
	}
	cache, cfg := newCertmagic(opts.Log, opts.RenewCheckInterval, certmagic.Config{
		Storage:           &certmagic.FileStorage{Path: filepath.Join(opts.StateDir, "certmagic")},
		Issuers:           []certmagic.Issuer{&caIssuer{ca: ca, lifetime: opts.LeafLifetime}},
		DefaultServerName: opts.Host,
	})
	if err := cfg.ManageSync(ctx, append([]string{opts.Host}, opts.Names...)); err != nil {
		cache.Stop()
		return nil, fmt.Errorf("obtain serving certificate for %s: %w", opts.Host, err)
	}
	return &SelfSigned{ca: ca, cache: cache, config: cfg}, nil
}

// TLSConfig serves the managed certificate. The apiserver dials an IP URL
// without SNI, so certmagic falls back to DefaultServerName (the advertised
// host) whatever local address the connection arrived on.
func (s *SelfSigned) TLSConfig() *tls.Config {
	return servingTLS(s.config)
}

// CABundle is the base64 PEM of the CA, as clientConfig.caBundle wants it.
func (s *SelfSigned) CABundle() string { return s.ca.Bundle() }

// CA returns the local CA.
func (s *SelfSigned) CA() *CA { return s.ca }

// Stop ends background renewal.
func (s *SelfSigned) Stop() { s.cache.Stop() }

// newCertmagic builds a certmagic cache with one config for every
// certificate in it. Every mode logs through slog and staples no OCSP (the
// apiserver does not check it, and private CAs have no responder).
// renewEvery 0 keeps certmagic's default.
func newCertmagic(log *slog.Logger, renewEvery time.Duration, base certmagic.Config) (*certmagic.Cache, *certmagic.Config) {
	logger := zap.New(slogCore{log: log})
	var cfg *certmagic.Config
	cache := certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert:   func(certmagic.Certificate) (*certmagic.Config, error) { return cfg, nil },
		RenewCheckInterval: renewEvery,
		OCSPCheckInterval:  24 * time.Hour,
		Logger:             logger,
	})
	base.OCSP = certmagic.OCSPConfig{DisableStapling: true}
	base.Logger = logger
	cfg = certmagic.New(cache, base)
	return cache, cfg
}

// slogCore forwards certmagic's zap logs to slog: warnings and errors as
// they are, everything else at debug.
type slogCore struct {
	log    *slog.Logger
	fields []zapcore.Field
}

func (c slogCore) Enabled(l zapcore.Level) bool { return c.log != nil }
func (c slogCore) With(f []zapcore.Field) zapcore.Core {
	return slogCore{log: c.log, fields: append(append([]zapcore.Field{}, c.fields...), f...)}
}
func (c slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}
func (c slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range append(c.fields, fields...) {
		f.AddTo(enc)
	}
	args := make([]any, 0, 2*len(enc.Fields)+2)
	args = append(args, "component", "certmagic")
	for k, v := range enc.Fields {
		args = append(args, k, v)
	}
	level := slog.LevelDebug
	if e.Level >= zapcore.WarnLevel {
		level = slog.LevelWarn
	}
	if e.Level >= zapcore.ErrorLevel {
		level = slog.LevelError
	}
	c.log.Log(context.Background(), level, e.Message, args...)
	return nil
}
func (c slogCore) Sync() error { return nil }

// localCAName is the local CA's common name.
const localCAName = "hookback local CA"
