package session

import (
	"slices"
	"testing"

	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/tunnel"
)

func TestListenHostAndCertOptions(t *testing.T) {
	tun := newTestTunnel(t, tunnel.Clients{}, "s1", "hookback-system")
	cases := []struct {
		name       string
		configured string
		host       string
		tun        *tunnel.Session
		wantBind   string
	}{
		{"bind address wins", "0.0.0.0", "127.0.0.1", nil, "0.0.0.0"},
		{"bind address wins over the tunnel", "0.0.0.0", "hookback-relay-s1.hookback-system.svc", tun, "0.0.0.0"},
		{"tunnel: loopback only", "", "hookback-relay-s1.hookback-system.svc", tun, "127.0.0.1"},
		{"advertised host of this machine", "", "127.0.0.1", nil, "127.0.0.1"},
		{"advertised host elsewhere: every address", "", "webhooks.example.com", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bind := listenHost(c.configured, c.host, c.tun)
			if bind != c.wantBind {
				t.Fatalf("listenHost(%q, %q) = %q, want %q", c.configured, c.host, bind, c.wantBind)
			}
			co := certOptions(certs.Options{Mode: certs.ModeSelfSigned}, c.host, bind, c.tun)
			if co.Host != c.host || co.ACME.ListenHost != bind {
				t.Fatalf("certOptions: Host %q, ACME.ListenHost %q; want %q, %q", co.Host, co.ACME.ListenHost, c.host, bind)
			}
			if c.tun != nil && !slices.Equal(co.Names, c.tun.Spec().DNSNames()[1:]) {
				t.Fatalf("certOptions: Names %v, want the relay Service's other names %v", co.Names, c.tun.Spec().DNSNames()[1:])
			}
			if c.tun == nil && len(co.Names) != 0 {
				t.Fatalf("certOptions: Names %v without a tunnel", co.Names)
			}
		})
	}
	t.Run("a configured ACME listen host is kept", func(t *testing.T) {
		co := certs.Options{Mode: certs.ModeACME}
		co.ACME.ListenHost = "192.0.2.7"
		if got := certOptions(co, "webhooks.example.com", "", nil); got.ACME.ListenHost != "192.0.2.7" {
			t.Fatalf("ACME.ListenHost = %q, want the configured 192.0.2.7", got.ACME.ListenHost)
		}
	})
}
