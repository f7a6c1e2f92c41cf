package session

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/plan"
)

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/kubectl": "/usr/bin/kubectl",
		"/my dir/kubectl":  "'/my dir/kubectl'",
		"it's":             `'it'\''s'`,
		"":                 "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestConfigValidate: every problem of a Options is reported at once, each
// naming what to fix.
func TestConfigValidate(t *testing.T) {
	allow := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })
	valid := func() plan.Options {
		return plan.Options{Session: "s", LeaseNamespace: "default", Port: 8443, Certs: certs.Options{Mode: certs.ModeSelfSigned},
			WebhookOptions: webhooks.DefaultOptions()}
	}
	tests := []struct {
		name   string
		change func(c *plan.Options)
		want   []string
	}{
		{name: "no session: <user>-<host>", change: func(c *plan.Options) { c.Session = "" }},
		{name: "valid", change: func(*plan.Options) {}},
		{name: "port out of range, no lease namespace", change: func(c *plan.Options) {
			c.Port, c.LeaseNamespace = 70000, ""
		}, want: []string{"plan.Options.Port 70000: want a TCP port, 1 to 65535", "the lease namespace is empty"}},
		{name: "extra webhooks without a handler, on one path", change: func(c *plan.Options) {
			c.Extra = []admission.Webhook{{Name: "a", Path: "/x", Handler: allow}, {Name: "b", Path: "/x"}}
		}, want: []string{`extra webhook "b" needs a name, a path starting with / and a handler`, "extra webhooks a and b both use path /x"}},
		{name: "upstream without manifests, a timeout beyond the apiserver's", change: func(c *plan.Options) {
			c.User = plan.UserWebhooks{Upstreams: []plan.Upstream{{URL: "https://127.0.0.1:9443"}}, Timeout: time.Minute}
		}, want: []string{"plan.UserWebhooks.Upstream needs plan.UserWebhooks.Manifests", "plan.UserWebhooks.Timeout 1m0s: want 1s to 30s"}},
		{name: "upstream and cert dir without manifests, for recorded cases (test)", change: func(c *plan.Options) {
			c.User = plan.UserWebhooks{Upstreams: []plan.Upstream{{URL: "https://127.0.0.1:9443"}}, CertDir: "d", RecordedPaths: true}
		}},
		{name: "manifests without upstream (rbac, check; serving them says which webhook has none)", change: func(c *plan.Options) {
			c.User = plan.UserWebhooks{Manifests: []string{"m.yaml"}}
		}},
		{name: "a cert dir without manifests", change: func(c *plan.Options) { c.User = plan.UserWebhooks{CertDir: "d"} },
			want: []string{"plan.UserWebhooks.CertDir needs plan.UserWebhooks.Manifests"}},
		{name: "the inspector beyond loopback, a negative keep", change: func(c *plan.Options) {
			c.Inspector = plan.InspectorConfig{Address: "0.0.0.0:8080", Keep: -1}
		}, want: []string{"plan.InspectorConfig.Keep -1", "pass plan.InspectorConfig.Expose"}},
		{name: "files mode without files", change: func(c *plan.Options) { c.Certs.Mode = certs.ModeFiles },
			want: []string{"certs.Options.Mode files needs certs.Options.CertFile and certs.Options.KeyFile"}},
		{name: "a session name that is no DNS label", change: func(c *plan.Options) { c.Session = "Not_Valid" },
			want: []string{`plan.Options.Session "Not_Valid": use lowercase letters, digits and '-', at most 40 characters`}},
		{name: "negative durations, a lease shorter than a second", change: func(c *plan.Options) {
			c.VerifyTimeout, c.LeaseDuration = -time.Second, time.Millisecond
		}, want: []string{"plan.Options.VerifyTimeout -1s: want more than 0", "plan.Options.LeaseDuration 1ms: want at least 1s"}},
		{name: "built-in options, each naming its field", change: func(c *plan.Options) { c.WebhookOptions.CPUOversellFactor = 0.5 },
			want: []string{"webhooks.Options.CPUOversellFactor 0.5: want a finite number >= 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.change(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, plan.ErrInvalidConfig) {
				t.Fatalf("Validate = %v, want an ErrInvalidConfig saying %q", err, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %v\nwant it to say %q", err, w)
				}
			}
		})
	}
}
