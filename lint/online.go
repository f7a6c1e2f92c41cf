package lint

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"
)

// Thresholds of the online rules.
const (
	// expirySoon: a caBundle certificate that expires within it is a
	// warning, time to rotate.
	expirySoon = 30 * 24 * time.Hour
	// slowShare: a p99 at this share of the timeout or more is a warning.
	slowShare = 0.8
	// dialTimeout bounds the TLS handshake with a url webhook.
	dialTimeout = 3 * time.Second
)

// checkEndpoints (online): a webhook whose Service has no ready endpoint
// fails every request it matches now, under Fail, and delays each under
// Ignore.
func checkEndpoints(in *Input, r *Rule) []Finding {
	if in.Live == nil {
		return nil
	}
	var fs []Finding
	for _, h := range in.Hooks {
		ref := h.ClientConfig.Service
		if ref == nil {
			continue
		}
		n, known := in.Live.ReadyEndpoints[ref.Namespace+"/"+ref.Name]
		if !known || n > 0 {
			continue
		}
		if h.fails() {
			f := h.finding(r, Error, "clientConfig.service", "Service %s/%s has no ready endpoint: under failurePolicy Fail every request this webhook matches is rejected now", ref.Namespace, ref.Name)
			f.Advice = "bring the webhook's pods back (kubectl -n " + ref.Namespace + " get pods,endpointslices), or set failurePolicy Ignore while it is down"
			f.Fix = []PatchOp{{Op: "add", Path: h.pointer("failurePolicy"), Value: "Ignore"}}
			fs = append(fs, f)
			continue
		}
		f := h.finding(r, Warning, "clientConfig.service", "Service %s/%s has no ready endpoint: every request this webhook matches goes through unjudged (failurePolicy Ignore)", ref.Namespace, ref.Name)
		fs = append(fs, f)
	}
	return fs
}

// checkCABundle: every caBundle certificate's expiry (offline too), and
// online, for a url webhook, whether the served certificate verifies.
func checkCABundle(in *Input, r *Rule) []Finding {
	var fs []Finding
	for _, h := range in.Hooks {
		certs, err := bundleCerts(h.ClientConfig.CABundle)
		if err != nil {
			fs = append(fs, h.finding(r, Error, "clientConfig.caBundle", "caBundle: %v: the apiserver cannot verify the webhook's server, so every call fails", err))
			continue
		}
		for _, c := range certs {
			switch left := c.NotAfter.Sub(in.now); {
			case left <= 0:
				fs = append(fs, h.finding(r, Error, "clientConfig.caBundle", "caBundle certificate %q expired on %s: calls to this webhook fail TLS verification", c.Subject.CommonName, c.NotAfter.UTC().Format(time.DateOnly)))
			case left < expirySoon:
				fs = append(fs, h.finding(r, Warning, "clientConfig.caBundle", "caBundle certificate %q expires on %s, in %d days: rotate it before then", c.Subject.CommonName, c.NotAfter.UTC().Format(time.DateOnly), int(left.Hours()/24)))
			}
		}
		if in.Live == nil || h.ClientConfig.URL == nil {
			continue
		}
		if err := verifyServed(*h.ClientConfig.URL, certs); err != nil {
			f := h.finding(r, Error, "clientConfig.caBundle", "the server at %s does not present a certificate the caBundle verifies: %v", *h.ClientConfig.URL, err)
			f.Advice = "set caBundle to the CA that signed the served certificate (base64 of its PEM)"
			fs = append(fs, f)
		}
	}
	return fs
}

// bundleCerts parses a caBundle; an empty one is nil (the apiserver then
// uses its system roots).
func bundleCerts(b []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := b; len(rest) > 0; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			return nil, fmt.Errorf("not a certificate: %w", err)
		}
		certs = append(certs, c)
	}
	if len(b) > 0 && len(certs) == 0 {
		return nil, errors.New("no PEM certificate in it")
	}
	return certs, nil
}

// verifyServed dials u and verifies its certificate against the bundle
// (the system roots when it is empty), as the apiserver would; a server
// that does not answer is not this rule's concern.
func verifyServed(u string, bundle []*x509.Certificate) error {
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme != "https" {
		return nil
	}
	host := pu.Host
	if pu.Port() == "" {
		host = net.JoinHostPort(pu.Hostname(), "443")
	}
	var roots *x509.CertPool
	if len(bundle) > 0 {
		roots = x509.NewCertPool()
		for _, c := range bundle {
			roots.AddCert(c)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{RootCAs: roots, ServerName: pu.Hostname(), MinVersion: tls.VersionTLS12}}
	conn, err := d.DialContext(ctx, "tcp", host)
	var verr *tls.CertificateVerificationError
	switch {
	case errors.As(err, &verr):
		return verr.Err
	case err != nil:
		return nil
	}
	return conn.Close()
}

// checkLatency (online): a webhook whose p99, by the apiserver's own
// measure, nears its timeout times out for some requests already.
func checkLatency(in *Input, r *Rule) []Finding {
	if in.Live == nil || in.Live.P99 == nil {
		return nil
	}
	var fs []Finding
	for _, h := range in.Hooks {
		p99, ok := in.Live.P99[h.Name]
		if !ok || p99 < slowShare*float64(h.timeout()) {
			continue
		}
		f := h.finding(r, Warning, "timeoutSeconds", "p99 %.2fs against a timeout of %ds (apiserver_admission_webhook_admission_duration_seconds): some calls already time out, and a little more load makes it fail %s",
			p99, h.timeout(), map[bool]string{true: "requests (failurePolicy Fail)", false: "open (failurePolicy Ignore)"}[h.fails()])
		f.Advice = "find what makes it slow (hookback start --upstream shows each review's time); a higher timeout eats into the request's deadline (chain-budget)"
		fs = append(fs, f)
	}
	return fs
}
