package kubeconfig

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// UserAgent identifies hookback in the apiserver's audit log.
const UserAgent = "hookback"

// restConfig copies the config with hookback's user agent, a request timeout
// and client-side rate limits (webhooks and controllers make bursts of small
// requests that client-go's default 5 QPS would throttle), reading the
// apiserver's clock from every answer.
func (c *Config) restConfig(timeout time.Duration) *rest.Config {
	rc := rest.CopyConfig(c.Rest)
	rc.UserAgent = UserAgent
	if timeout > 0 {
		rc.Timeout = timeout
	}
	if rc.QPS == 0 {
		rc.QPS = 50
		rc.Burst = 100
	}
	if c.Clock != nil {
		rc.Wrap(c.Clock.wrap)
	}
	return rc
}

// Dynamic builds a dynamic client, for server-side apply of rendered objects.
func (c *Config) Dynamic(timeout time.Duration) (*dynamic.DynamicClient, error) {
	dc, err := dynamic.NewForConfig(c.restConfig(timeout))
	if err != nil {
		return nil, fmt.Errorf("build dynamic client for %s: %w", c.Server, err)
	}
	return dc, nil
}

// Clientset builds a typed client with a request timeout, so an unreachable
// apiserver fails fast with one error instead of hanging.
func (c *Config) Clientset(timeout time.Duration) (*kubernetes.Clientset, error) {
	cs, err := kubernetes.NewForConfig(c.restConfig(timeout))
	if err != nil {
		return nil, fmt.Errorf("build client for %s: %w", c.Server, err)
	}
	return cs, nil
}

// ServerVersion asks /version, explaining connection failures.
func ServerVersion(ctx context.Context, cs kubernetes.Interface, server string) (*version.Info, error) {
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("connect to apiserver %s: %w", server, Explain(err))
	}
	return v, ctx.Err()
}

// Explain turns a client error into one line that says what went wrong and
// what to try. It keeps the original error wrapped.
func Explain(err error) error {
	if err == nil {
		return nil
	}
	var hint string
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var dnsErr *net.DNSError
	var urlErr *url.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		hint = "connection refused: is the cluster running and the kubeconfig's server address right?"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		hint = "no route to the apiserver: check the network or VPN"
	case errors.As(err, &dnsErr):
		hint = fmt.Sprintf("cannot resolve %q: check the kubeconfig's server address", dnsErr.Name)
	case errors.As(err, &unknownCA):
		hint = "the apiserver's certificate is signed by an unknown authority: check certificate-authority-data in the kubeconfig"
	case errors.As(err, &hostErr):
		hint = "the apiserver's certificate is not valid for this address: " + hostErr.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), isTimeout(err, &urlErr):
		hint = "timed out: the apiserver did not answer; check the address, firewall or VPN"
	case apierrors.IsUnauthorized(err):
		hint = "unauthorized: the kubeconfig's credentials were rejected (expired token or certificate?)"
	case apierrors.IsForbidden(err):
		hint = "forbidden: " + err.Error()
	default:
		return err
	}
	return &explained{hint: hint, err: err}
}

func isTimeout(err error, urlErr **url.Error) bool {
	if errors.As(err, urlErr) {
		return (*urlErr).Timeout()
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

type explained struct {
	hint string
	err  error
}

func (e *explained) Error() string { return e.hint }
func (e *explained) Unwrap() error { return e.err }
