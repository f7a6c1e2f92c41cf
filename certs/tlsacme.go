package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/certmagic"

	"github.com/hookback/hookback/field"
)

// LetsEncryptCA is the default ACME directory: Let's Encrypt production.
const LetsEncryptCA = certmagic.LetsEncryptProductionCA

// ACMEOptions configures a serving certificate obtained from an ACME CA.
type ACMEOptions struct {
	// CA is the ACME directory URL.
	CA string
	// Email is the optional account contact.
	Email string
	// CARootFile is a PEM file trusted, beside the system roots, for the ACME
	// server's own HTTPS (a private ACME server); empty: system roots only.
	CARootFile string
	// Profile is the ACME profile to order under; empty: the CA's default.
	Profile string
	// HTTPPort is where the HTTP-01 challenge is answered. The listener is
	// opened for each challenge (first issuance and every renewal) on
	// ListenHost and closed when the challenge is done.
	HTTPPort int
	// ListenHost is the host the challenge listener binds; empty: every interface.
	ListenHost string
	// CAFile is the caBundle source (the ACME CA's issuing root when it is
	// private); empty means the certificate is publicly trusted.
	CAFile string
	// StateDir holds certmagic's storage (account and certificates) under acme/.
	StateDir string
	// Host is the advertised IP or DNS name the certificate must cover.
	Host string
	// RenewCheckInterval is how often certmagic looks for renewals.
	RenewCheckInterval time.Duration
	Log                *slog.Logger
}

// ACMECerts serves a certificate obtained and renewed by certmagic's ACME issuer.
type ACMECerts struct {
	cache    *certmagic.Cache
	config   *certmagic.Config
	caBundle string
}

var _ Certs = (*ACMECerts)(nil)

// nonInteractive keeps certmagic from prompting on stdin for an email address
// and the CA's terms: a synchronous first issuance counts as interactive there.
// Choosing --tls-mode acme is the agreement.
type nonInteractive struct{ *certmagic.ACMEIssuer }

func (n nonInteractive) PreCheck(ctx context.Context, names []string, _ bool) error {
	return n.ACMEIssuer.PreCheck(ctx, names, false)
}

var profileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// validate checks the options without touching the network.
func (o ACMEOptions) validate() error {
	u, err := url.Parse(o.CA)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return field.New("certs.ACMEOptions.CA", strconv.Quote(o.CA), "want the https:// URL of an ACME directory")
	}
	if o.Email != "" {
		if a, err := mail.ParseAddress(o.Email); err != nil || a.Address != o.Email {
			return field.New("certs.ACMEOptions.Email", strconv.Quote(o.Email), "want a plain email address")
		}
	}
	if o.Profile != "" && !profileName.MatchString(o.Profile) {
		return field.New("certs.ACMEOptions.Profile", strconv.Quote(o.Profile), "want a profile name such as shortlived")
	}
	if o.HTTPPort < 1 || o.HTTPPort > 65535 {
		return field.New("certs.ACMEOptions.HTTPPort", strconv.Itoa(o.HTTPPort), "want 1-65535")
	}
	if o.Host == "" {
		return fmt.Errorf("acme: no host to obtain a certificate for")
	}
	if strings.HasSuffix(u.Hostname(), "api.letsencrypt.org") {
		if !certmagic.SubjectQualifiesForPublicCert(o.Host) {
			return field.Advise("plan.Options.AdvertiseAddress", "let's encrypt cannot issue a certificate for %s: advertise a public IP or DNS name ({plan.Options.AdvertiseAddress})", o.Host)
		}
		if net.ParseIP(o.Host) != nil && o.Profile != "shortlived" {
			return field.Advise("certs.ACMEOptions.Profile", "let's encrypt issues IP certificates only under {certs.ACMEOptions.Profile} shortlived, not %q", o.Profile)
		}
	}
	return nil
}

// trustedRoots is the system pool plus the PEM certificates of file, or nil
// (the system roots) when file is empty.
func trustedRoots(file string) (*x509.CertPool, error) {
	if file == "" {
		return nil, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read %w", field.Errorf("certs.ACMEOptions.CARootFile", "", "%w", err))
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(b) {
		return nil, field.New("certs.ACMEOptions.CARootFile", file, "no PEM certificate in it")
	}
	return pool, nil
}

// checkProfile reports whether the directory offers profile; profiles is the
// directory's meta.profiles.
func checkProfile(ca, profile string, profiles map[string]string) error {
	if profile == "" {
		return nil
	}
	if _, ok := profiles[profile]; ok {
		return nil
	}
	if len(profiles) == 0 {
		return field.Advise("certs.ACMEOptions.Profile", "the ACME CA %s offers no profiles: pass {certs.ACMEOptions.Profile} \"\"", ca)
	}
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	slices.Sort(names)
	return fmt.Errorf("the ACME CA %s does not offer profile %q (it offers %s)", ca, profile, strings.Join(names, ", "))
}

// fetchProfiles reads the directory once, so an unreachable CA, an untrusted
// ACME server certificate or an unknown profile fail early and clearly.
func fetchProfiles(ctx context.Context, ca string, roots *x509.CertPool) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ca, nil)
	if err != nil {
		return nil, field.Errorf("certs.ACMEOptions.CA", strconv.Quote(ca), "%w", err)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, field.Errorf("certs.ACMEOptions.CA", strconv.Quote(ca), "reach it (does it need {certs.ACMEOptions.CARootFile}?): %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read ACME directory %s: %w", ca, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read ACME directory %s: %s", ca, resp.Status)
	}
	var dir struct {
		NewOrder string `json:"newOrder"`
		Meta     struct {
			Profiles map[string]string `json:"profiles"`
		} `json:"meta"`
	}
	if err := json.Unmarshal(body, &dir); err != nil || dir.NewOrder == "" {
		return nil, field.Clause("certs.ACMEOptions.CA", ca, fmt.Sprintf("is not an ACME directory: no newOrder in %.80q", body))
	}
	return dir.Meta.Profiles, nil
}

// NewACMECerts obtains (or loads from StateDir) a certificate for opts.Host
// and keeps it renewed. Call Stop to end background renewal.
func NewACMECerts(ctx context.Context, opts ACMEOptions) (*ACMECerts, error) {
	if opts.RenewCheckInterval == 0 {
		opts.RenewCheckInterval = 10 * time.Minute
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	roots, err := trustedRoots(opts.CARootFile)
	if err != nil {
		return nil, err
	}
	bundle, err := readCABundle(opts.CAFile)
	if err != nil {
		return nil, err
	}
	profiles, err := fetchProfiles(ctx, opts.CA, roots)
	if err != nil {
		return nil, err
	}
	if err := checkProfile(opts.CA, opts.Profile, profiles); err != nil {
		return nil, err
	}
	a := &ACMECerts{caBundle: bundle}
	a.cache, a.config = newACMEConfig(opts, roots)
	if err := a.config.ManageSync(ctx, []string{opts.Host}); err != nil {
		a.cache.Stop()
		return nil, fmt.Errorf("obtain certificate for %s from %s: %w", opts.Host, opts.CA, err)
	}
	return a, nil
}

// newACMEConfig builds the certmagic cache and config. ARI is off: renewal
// happens when a third of the lifetime is left, which suits short-lived
// leaves (shortlived has no revocation to signal) and private CAs alike.
func newACMEConfig(opts ACMEOptions, roots *x509.CertPool) (*certmagic.Cache, *certmagic.Config) {
	cache, cfg := newCertmagic(opts.Log, opts.RenewCheckInterval, certmagic.Config{
		Storage:           &certmagic.FileStorage{Path: filepath.Join(opts.StateDir, "acme")},
		DefaultServerName: opts.Host,
		DisableARI:        true,
	})
	iss := certmagic.NewACMEIssuer(cfg, certmagic.ACMEIssuer{
		CA:      opts.CA,
		Email:   opts.Email,
		Agreed:  true,
		Profile: opts.Profile,
		// The webhook port serves the webhooks, not TLS-ALPN challenges.
		DisableTLSALPNChallenge: true,
		ListenHost:              opts.ListenHost,
		AltHTTPPort:             opts.HTTPPort,
		TrustedRoots:            roots,
		Logger:                  cfg.Logger,
	})
	cfg.Issuers = []certmagic.Issuer{nonInteractive{iss}}
	return cache, cfg
}

// TLSConfig serves the managed certificate; with no SNI (the apiserver dials
// an IP URL) certmagic falls back to DefaultServerName, the advertised host.
func (a *ACMECerts) TLSConfig() *tls.Config {
	return servingTLS(a.config)
}

// CABundle is the base64 of --ca-file, or empty for a publicly trusted CA.
func (a *ACMECerts) CABundle() string { return a.caBundle }

// Watch has nothing to watch: certmagic renews the leaf in the background
// and the caBundle is read once.
func (a *ACMECerts) Watch(context.Context, chan<- struct{}) (func(), error) { return nil, nil }

// Stop ends background renewal.
func (a *ACMECerts) Stop() { a.cache.Stop() }
