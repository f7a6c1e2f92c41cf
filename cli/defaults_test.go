package cli

import (
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/plan"
)

// TestDefaultsAreTheLibrarys: start's flags default (and their help
// documents) what the library's DefaultOptions gives, so a program that
// embeds hookback runs as `hookback start` does: the flags bind straight to
// its fields, and both complete to the same values.
func TestDefaultsAreTheLibrarys(t *testing.T) {
	cliCfg, err := plan.Complete(defaultStartOptions().config(Extension{}, discardLog, io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	lib := plan.DefaultOptions()
	lib.Version = version()
	libCfg, err := plan.Complete(lib)
	if err != nil {
		t.Fatal(err)
	}
	cli, done := cliCfg.Options(), libCfg.Options()
	tests := []struct {
		name          string
		flag, library any
	}{
		{"--port", cli.Port, done.Port},
		{"--health-address", cli.HealthAddress, done.HealthAddress},
		{"--lease-namespace", cli.LeaseNamespace, done.LeaseNamespace},
		{"--lease-duration", cli.LeaseDuration, done.LeaseDuration},
		{"--verify-timeout", cli.VerifyTimeout, done.VerifyTimeout},
		{"--late-answer-timeout", cli.User.LateAnswerTimeout, done.User.LateAnswerTimeout},
		{"--tunnel-namespace", cli.Tunnel.Namespace, done.Tunnel.Namespace},
		{"--relay-image", cli.Tunnel.Image, done.Tunnel.Image},
		{"--inspector-address", cli.Inspector, done.Inspector},
		{"--state-dir", cli.Certs.StateDir, done.Certs.StateDir},
		{"--tls-mode", cli.Certs.Mode, certs.ModeSelfSigned},
		{"--acme-*", cli.Certs.ACME, done.Certs.ACME},
		{"--session", cli.Session, plan.DefaultSession()},
		{"--webhooks", strings.Join(cli.Webhooks, ","), strings.Join(done.Webhooks, ",")},
		{"reload interval", cli.ReloadInterval, done.ReloadInterval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.flag, tt.library) {
				t.Errorf("the flag defaults to %v, the library to %v", tt.flag, tt.library)
			}
		})
	}
}

// unflagged are the fields of plan.Options no flag of start sets, each
// with the reason; a path ending in "." covers every field below it.
var unflagged = map[string]string{
	"Kubeconfig.":            "--kubeconfig and --context are global flags every command shares (GlobalOptions); config passes them in",
	"Template.Default":       "the template built into the program (main embeds webhook-url.yaml.tmpl; an embedding program its own)",
	"Extra":                  "webhooks of a program that embeds hookback (Extension), not a flag's",
	"Observers":              "Go API only: handlers an embedding program adds",
	"Project":                "resolved by Complete from --project (ProjectDir)",
	"Version":                "this build's version (cli/version.go), for the relay image's default",
	"RedirectConversion":     "Go API only: a predicate; the CLI's conversion choice is --convert (Scope.ConvertCRDs)",
	"ReloadInterval":         "a backstop period of the file watches, not a user choice",
	"Out":                    "the command's stdout",
	"Log":                    "built from --log-format and --log-level (GlobalOptions)",
	"Kubectl":                "$HOOKBACK_KUBECTL, read by Complete (make run sets it to the local control plane's kubectl)",
	"OnReady":                "Go API only: a callback (the drill's)",
	"Certs.Log":              "the command's logger",
	"User.Stdin":             "the command's stdin (--webhook-config -)",
	"User.Upstreams":         "parsed from --upstream by Complete",
	"User.RecordedPaths":     "set by hookback test, whose recorded cases need no manifests",
	"User.UpstreamDefaulted": "set by Complete in project mode",
	"Policies.Stdin":         "the command's stdin (--policy -)",
	"PolicyEnforce.Input.":   "--policy's, moved here by Complete with --policy-enforce",
	"Inspector.Fallback":     "set by Complete when --inspector-address is the default",
	"Certs.Host":             "the advertised host, set by the run once it decided it",
	"Certs.Names":            "the relay Service's names, set by the run with --tunnel",
	"Certs.ACME.Host":        "from Certs.Host (certs: its Host, StateDir, CAFile and Log come from Certs)",
	"Certs.ACME.StateDir":    "from Certs.StateDir (--state-dir)",
	"Certs.ACME.CAFile":      "from Certs.CAFile (--ca-file)",
	"Certs.ACME.Log":         "from Certs.Log",
	"Certs.ACME.ListenHost":  "the bind address, set by the run",
	"Scope.Username":         "your identity, resolved against the cluster by the run (--only-mine)",
	"Scope.Local":            "whether the cluster is the developer's own, resolved by the run",
	"Tunnel.AttachTimeout":   "tunnel.DefaultAttachTimeout; a tuning knob of tests",
}

// TestEveryOptionHasAFlag: every field of plan.Options is set by one of
// start's flags (bound straight to it) or named in unflagged with the
// reason it has none, so a new option cannot be forgotten by the CLI.
func TestEveryOptionHasAFlag(t *testing.T) {
	o, b := defaultStartOptions(), &binder{}
	o.bind(b)
	bound := map[uintptr]string{}
	for name, p := range b.fields {
		bound[reflect.ValueOf(p).Pointer()] = name
	}
	var missing []string
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		for i := range v.NumField() {
			f, fv := v.Type().Field(i), v.Field(i)
			p := path + f.Name
			if !f.IsExported() {
				continue
			}
			if _, ok := bound[fv.Addr().Pointer()]; ok && fv.Kind() != reflect.Struct {
				continue
			}
			if covered(p) {
				continue
			}
			if fv.Kind() == reflect.Struct {
				walk(fv, p+".")
				continue
			}
			missing = append(missing, p)
		}
	}
	walk(reflect.ValueOf(&o.Plan).Elem(), "")
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("plan.Options.%s: no flag of start binds it, and unflagged gives no reason", m)
	}
}

func covered(path string) bool {
	for k, why := range unflagged {
		if why == "" {
			continue
		}
		if k == path || strings.HasSuffix(k, ".") && strings.HasPrefix(path, k) {
			return true
		}
	}
	return false
}
