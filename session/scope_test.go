package session

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
)

// TestScopeConversions: on a cluster that is not local only CRDs named
// with --convert are redirected, and one line names those left alone.
func TestScopeConversions(t *testing.T) {
	var log bytes.Buffer
	cfg := plan.Options{Log: slog.New(slog.NewTextHandler(&log, nil)),
		Scope: registration.Scope{Namespaces: []string{"a"}, ConvertCRDs: []string{"widgets.example.com"}}}
	conv := &conversions{crds: []registration.CRD{
		{Name: "widgets.example.com", Conversion: &registration.Route{}},
		{Name: "gadgets.example.com", Conversion: &registration.Route{}},
		{Name: "plain.example.com"},
	}}
	redirect := scopeConversions(cfg.RedirectConversion, cfg.Scope, cfg.Log, conv)
	if !redirect("widgets.example.com") || redirect("gadgets.example.com") {
		t.Error("want only widgets.example.com redirected")
	}
	if s := log.String(); !strings.Contains(s, "conversion of gadgets.example.com left alone") || strings.Contains(s, "plain") {
		t.Errorf("log = %q, want one line naming gadgets.example.com only", s)
	}
	cfg.Scope.Local = true
	if !scopeConversions(cfg.RedirectConversion, cfg.Scope, cfg.Log, conv)("gadgets.example.com") {
		t.Error("a local cluster redirects every CRD")
	}
}
