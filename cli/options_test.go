package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/incluster"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/session"
	"github.com/hookback/hookback/tunnel"
)

// TestInvalidConfigSameErrorFromLibraryAndCLI: a rule of the Config lives
// once, in the library. A program that embeds hookback and passes the
// invalid values to session.Run (or incluster.Serve, InCluster) gets, before anything
// is dialled, the error the CLI prints for the same flags, as a usage
// error, with the fields' names where the CLI names their flags (the one
// mapping, withFlagNames); and the CLI says each problem once, so nothing
// validates it twice.
func TestInvalidConfigSameErrorFromLibraryAndCLI(t *testing.T) {
	nowhere := kubeconfig.Options{Path: "/nonexistent/kubeconfig"}
	start := func(change func(*plan.Options)) func() error {
		return func() error {
			cfg := plan.Options{Kubeconfig: nowhere, Session: "dev", AdvertiseAddress: "127.0.0.1", Port: DefaultPort,
				LeaseNamespace: "default", Certs: certs.Options{Mode: certs.ModeSelfSigned, StateDir: t.TempDir()},
				WebhookOptions: webhooks.DefaultOptions()}
			change(&cfg)
			c, err := plan.Complete(cfg)
			if err != nil {
				return err
			}
			return session.Run(context.Background(), c)
		}
	}
	state := t.TempDir()
	startArgs := func(args ...string) []string {
		return append([]string{"start", "--state-dir", state, "--kubeconfig", nowhere.Path}, args...)
	}
	tests := []struct {
		name    string
		args    []string
		library func() error
	}{{
		name: "start: port, session, inspector keep, verify timeout",
		args: startArgs("--advertise-address", "127.0.0.1", "--port", "0", "--session", "Not_Valid", "--inspector-keep", "-1", "--verify-timeout", "-1s"),
		library: start(func(c *plan.Options) {
			c.Port, c.Session, c.Inspector.Keep, c.VerifyTimeout = 0, "Not_Valid", -1, -time.Second
		}),
	}, {
		name: "start: files mode without files, a built-in's option",
		args: startArgs("--advertise-address", "127.0.0.1", "--tls-mode", "files", "--cpu-oversell-factor", "0.5"),
		library: start(func(c *plan.Options) {
			c.Certs.Mode, c.WebhookOptions.CPUOversellFactor = certs.ModeFiles, 0.5
		}),
	}, {
		name: "start: a tunnel in acme mode",
		args: startArgs("--tunnel", "--relay-image", "relay:test", "--tls-mode", "acme"),
		library: start(func(c *plan.Options) {
			c.AdvertiseAddress, c.Certs.Mode = "", certs.ModeACME
			c.Tunnel = tunnel.Config{Enabled: true, Namespace: tunnel.DefaultNamespace, Image: "relay:test"}
		}),
	}, {
		name: "serve: port, lease duration",
		args: []string{"serve", "--kubeconfig", nowhere.Path, "--port", "0", "--lease-duration", "1500ms"},
		library: func() error {
			return incluster.Serve(context.Background(), incluster.ServeConfig{Kubeconfig: nowhere, Namespace: incluster.DefaultNamespace,
				Port: 0, LeaseDuration: 1500 * time.Millisecond, Template: []byte("x"), WebhookOptions: webhooks.DefaultOptions()})
		},
	}, {
		name: "render --in-cluster: replicas, image",
		args: []string{"render", "--in-cluster", "--replicas", "0", "--image", "a b"},
		library: func() error {
			_, err := incluster.InCluster(incluster.Options{Namespace: incluster.DefaultNamespace, Image: "a b", Template: []byte("x")})
			return err
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, cliErr := run(t, tt.args...)
			libErr := tt.library()
			if !errors.Is(libErr, plan.ErrInvalidConfig) && !errors.Is(libErr, incluster.ErrInvalidConfig) {
				t.Fatalf("the library returned %v, want an invalid configuration", libErr)
			}
			if len(field.All(libErr)) == 0 || strings.Contains(libErr.Error(), "--") {
				t.Errorf("the library's error names no field, or a flag:\n%v", libErr)
			}
			shown := withFlagNames(libErr).Error()
			if want := "exit 2: Error: " + shown; cliErr == nil || cliErr.Error() != want {
				t.Fatalf("the CLI said\n%v\nthe library, with flag names\n%s", cliErr, want)
			}
			for _, line := range strings.Split(shown, "\n") {
				if n := strings.Count(cliErr.Error(), line); n != 1 {
					t.Errorf("the CLI says %q %d times, want once", line, n)
				}
			}
		})
	}
}
