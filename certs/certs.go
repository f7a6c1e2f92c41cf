// Package certs provides hookback's serving certificates, all managed by
// certmagic behind one Certs interface: SelfSigned (a local CA kept in the
// state directory), FileCerts (user-provided files, hot-reloaded) and
// ACMECerts (an ACME CA such as Let's Encrypt).
package certs

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/caddyserver/certmagic"

	"github.com/hookback/hookback/field"
)

// Certs serves a certificate and names the caBundle that makes the
// apiserver trust it.
//
// Contract: TLSConfig and CABundle are safe for concurrent use; CABundle may
// change while running (user-provided files), in which case Watch reports it
// so the configurations are re-applied.
type Certs interface {
	TLSConfig() *tls.Config
	CABundle() string
	// Watch reports changes of the certificate material on changed until ctx
	// is done; wait blocks until it has stopped. Nil wait: nothing to watch.
	Watch(ctx context.Context, changed chan<- struct{}) (wait func(), err error)
	Stop()
}

// Staged is a Certs that serves a certificate of a new CA only once the
// configurations trust it.
//
// Contract: the session calls Applied with the caBundle of configurations it
// has just written; Applied must not block. A later switch is reported on
// the Watch channel like any other change.
type Staged interface {
	Applied(caBundle string)
}

var (
	_ Certs = (*SelfSigned)(nil)
	_ Certs = (*FileCerts)(nil)
	_ Certs = (*ACMECerts)(nil)
)

// servingTLS is the TLS configuration every mode serves with: certmagic's
// certificate selection, HTTP/2 first, TLS 1.2 at least. With no SNI (the
// apiserver dials an IP URL without one) certmagic falls back to the
// config's DefaultServerName, the advertised host.
func servingTLS(cfg *certmagic.Config) *tls.Config {
	tc := cfg.TLSConfig()
	tc.NextProtos = []string{"h2", "http/1.1"}
	tc.MinVersion = tls.VersionTLS12
	return tc
}

// readCABundle reads --ca-file as the base64 clientConfig.caBundle wants;
// no file means an empty caBundle (the apiserver's system roots).
func readCABundle(file string) (string, error) {
	if file == "" {
		return "", nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", field.Advise("certs.Options.CAFile", "read {certs.Options.CAFile}: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// trySend reports on ch without blocking: one pending report is enough.
func trySend(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Modes, as --tls-mode names them.
const (
	ModeSelfSigned = "self-signed"
	ModeFiles      = "files"
	ModeACME       = "acme"
)

// Options choose and configure the serving certificate.
type Options struct {
	// Mode is ModeSelfSigned, ModeFiles or ModeACME.
	Mode string
	// Host is the advertised IP or DNS name the certificate must cover.
	Host string
	// Names are more names a self-signed certificate covers (a Service's
	// other spellings).
	Names []string
	// StateDir keeps the local CA and certmagic's storage.
	StateDir string
	// CertFile and KeyFile are the files mode's pair.
	CertFile, KeyFile string
	// CAFile is the caBundle in files and acme modes; empty: the apiserver's
	// system roots.
	CAFile string
	// ACME configures acme mode; its Host, StateDir, CAFile and Log come
	// from these Options.
	ACME ACMEOptions
	Log  *slog.Logger
}

// Validate reports every problem with the options at once, each a
// field.Error naming its field.
func (o Options) Validate() error {
	switch o.Mode {
	case ModeSelfSigned, ModeACME:
		return nil
	case ModeFiles:
		if o.CertFile == "" || o.KeyFile == "" {
			return field.Clause("certs.Options.Mode", ModeFiles, "needs {certs.Options.CertFile} and {certs.Options.KeyFile}")
		}
		return nil
	default:
		return field.New("certs.Options.Mode", strconv.Quote(o.Mode), fmt.Sprintf("want %s, %s or %s", ModeSelfSigned, ModeACME, ModeFiles))
	}
}

// New obtains the serving certificate for o.Host as o.Mode says. Stop it
// when done. Files mode keeps watching its files after ctx ends, until Stop.
func New(ctx context.Context, o Options) (Certs, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	switch o.Mode {
	case ModeFiles:
		return NewFileCerts(context.WithoutCancel(ctx), FileTLSOptions{
			CertFile: o.CertFile, KeyFile: o.KeyFile, CAFile: o.CAFile, Host: o.Host, Interval: 2 * time.Second, Log: o.Log,
		})
	case ModeACME:
		a := o.ACME
		a.Host, a.StateDir, a.CAFile, a.Log = o.Host, o.StateDir, o.CAFile, o.Log
		return NewACMECerts(ctx, a)
	default:
		return NewSelfSigned(ctx, TLSOptions{StateDir: o.StateDir, Host: o.Host, Names: o.Names, Log: o.Log})
	}
}

// CABundle is the caBundle New's certificate would need, without obtaining
// a certificate: what `hookback render` prints.
func CABundle(o Options) (string, error) {
	if err := o.Validate(); err != nil {
		return "", err
	}
	if o.Mode != ModeSelfSigned {
		return readCABundle(o.CAFile)
	}
	ca, err := LoadOrCreateCA(o.StateDir, localCAName)
	if err != nil {
		return "", err
	}
	return ca.Bundle(), nil
}
