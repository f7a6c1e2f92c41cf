package policy

import (
	"strings"
	"testing"
)

func TestCompileErrors(t *testing.T) {
	set, err := Load([]string{"testdata/compile/policy.yaml"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := set.CompileErrors()
	if got := Names(errs); len(got) != 1 || got[0] != "ValidatingAdmissionPolicy/typo" {
		t.Fatalf("policies with compile errors %q, want only ValidatingAdmissionPolicy/typo", got)
	}
	msg := errs["ValidatingAdmissionPolicy/typo"].ToAggregate().Error()
	for _, want := range []string{`spec.validations[0].expression: Invalid value: "object.data.size() < 3 &&": compilation failed: ERROR: <input>:1:`, "Syntax error"} {
		if !strings.Contains(msg, want) {
			t.Errorf("compile error %q lacks %q", msg, want)
		}
	}
}
