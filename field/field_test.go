package field

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestError(t *testing.T) {
	flag := func(f string) string { return "--" + strings.ToLower(f[strings.LastIndex(f, ".")+1:]) }
	tests := []struct {
		name       string
		err        *Error
		text, flag string
		refs       []string
	}{{
		name: "value and detail",
		err:  New("plan.Options.Port", "0", "want a TCP port, 1 to 65535"),
		text: "plan.Options.Port 0: want a TCP port, 1 to 65535",
		flag: "--port 0: want a TCP port, 1 to 65535",
	}, {
		name: "no value, a reference in the advice",
		err:  New("plan.Options.ChainAuditLog", "a.log", "it serves {plan.Options.Chain} only: add {plan.Options.Chain}"),
		text: "plan.Options.ChainAuditLog a.log: it serves plan.Options.Chain only: add plan.Options.Chain",
		flag: "--chainauditlog a.log: it serves --chain only: add --chain",
		refs: []string{"plan.Options.Chain", "plan.Options.Chain"},
	}, {
		name: "nested field, no detail",
		err:  New("plan.InspectorConfig.Keep", "-1", ""),
		text: "plan.InspectorConfig.Keep -1",
		flag: "--keep -1",
	}, {
		name: "a clause after the field",
		err:  Clause("certs.Options.Mode", "files", "needs {certs.Options.CertFile} and {certs.Options.KeyFile}"),
		text: "certs.Options.Mode files needs certs.Options.CertFile and certs.Options.KeyFile",
		flag: "--mode files needs --certfile and --keyfile",
		refs: []string{"certs.Options.CertFile", "certs.Options.KeyFile"},
	}, {
		name: "advice: the whole message, the field only referred to",
		err:  Advise("registration.Scope.Namespaces", "refusing: add {registration.Scope.Namespaces} NS or {registration.Scope.AllNamespaces}"),
		text: "refusing: add registration.Scope.Namespaces NS or registration.Scope.AllNamespaces",
		flag: "refusing: add --namespaces NS or --allnamespaces",
		refs: []string{"registration.Scope.Namespaces", "registration.Scope.AllNamespaces"},
	}, {
		name: "braces that are no field stay",
		err:  New("certs.Options.Mode", "", "want {a,b} or {x.y}"),
		text: "certs.Options.Mode: want {a,b} or {x.y}",
		flag: "--mode: want {a,b} or {x.y}",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.text {
				t.Errorf("Error() = %q, want %q", got, tt.text)
			}
			if got := tt.err.Text(flag); got != tt.flag {
				t.Errorf("Text(flag) = %q, want %q", got, tt.flag)
			}
			if got := tt.err.Refs(); fmt.Sprint(got) != fmt.Sprint(tt.refs) {
				t.Errorf("Refs() = %v, want %v", got, tt.refs)
			}
		})
	}
}

func TestErrorfCauseAndAll(t *testing.T) {
	inner := New("registration.Scope.Namespaces", `"A"`, "want a DNS label")
	outer := Errorf("upstream.ShadowTarget.URL", `"x"`, "read it: %w", io.EOF)
	err := fmt.Errorf("start: %w", errors.Join(outer, fmt.Errorf("scope: %w", inner), errors.New("other")))
	if !errors.Is(err, io.EOF) {
		t.Error("the cause is lost")
	}
	var fe *Error
	if !errors.As(err, &fe) || fe != outer {
		t.Errorf("errors.As found %v, want the first field error", fe)
	}
	if got := All(err); len(got) != 2 || got[0] != outer || got[1] != inner {
		t.Errorf("All = %v, want both field errors in order", got)
	}
	if got, want := outer.Error(), `upstream.ShadowTarget.URL "x": read it: EOF`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
