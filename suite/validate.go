package suite

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

var operations = []string{"CREATE", "UPDATE", "DELETE", "CONNECT"}

// validate checks what decoding cannot: one input, what each operation
// needs, an expectation that fits the input.
func validate(l *Loaded, n *yaml.Node) []error {
	c, file := &l.Case, l.File.Path
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, posError(file, pathLine(n, field), format, args...))
	}
	inputs := 0
	for _, set := range []bool{len(c.Review) > 0, c.Record != "", c.Operation != "" || has(c.Object, c.ObjectFile) || has(c.OldObject, c.OldObjectFile), c.Conversion != nil} {
		if set {
			inputs++
		}
	}
	switch {
	case inputs == 0:
		bad("name", "case %q has no input: give review, record, operation with object, or conversion", c.Name)
	case inputs > 1:
		bad("name", "case %q has more than one input: give one of review, record, operation with object, or conversion", c.Name)
	}
	if len(c.Object) > 0 && c.ObjectFile != "" {
		bad("objectFile", "give object or objectFile, not both")
	}
	if len(c.OldObject) > 0 && c.OldObjectFile != "" {
		bad("oldObjectFile", "give oldObject or oldObjectFile, not both")
	}
	manifest := c.Operation != "" || has(c.Object, c.ObjectFile) || has(c.OldObject, c.OldObjectFile)
	if manifest {
		switch op := c.Operation; {
		case !slices.Contains(operations, op):
			bad("operation", "operation %q: want one of %s", op, strings.Join(operations, ", "))
		case (op == "CREATE" || op == "UPDATE" || op == "CONNECT") && !has(c.Object, c.ObjectFile):
			bad("operation", "%s needs object or objectFile", op)
		case op == "UPDATE" && !has(c.OldObject, c.OldObjectFile):
			bad("operation", "UPDATE needs oldObject or oldObjectFile: the object as stored before the update")
		case op == "DELETE" && !has(c.OldObject, c.OldObjectFile):
			bad("operation", "DELETE needs oldObject or oldObjectFile: the object being deleted")
		}
	}
	if cv := c.Conversion; cv != nil {
		if !has(cv.Object, cv.ObjectFile) {
			bad("conversion", "conversion needs object or objectFile")
		}
		if cv.DesiredAPIVersion == "" {
			bad("conversion", "conversion needs desiredAPIVersion, such as batch.tutorial.kubebuilder.io/v2")
		}
	}
	if k := c.ConfigurationKind; k != "" && !slices.Contains(ConfigurationKinds, k) {
		bad("configurationKind", "configurationKind %q: want one of %s", k, strings.Join(ConfigurationKinds, ", "))
	}
	if c.Path != "" && !strings.HasPrefix(c.Path, "/") {
		bad("path", "path %q: want hookback's path of the webhook, such as /upstream/svc/system/webhook-service/443/validate", c.Path)
	}
	if (c.ConfigurationKind != "" || c.Path != "") && len(c.Webhooks) == 0 && c.Record == "" {
		bad("name", "case %q: configurationKind and path say which of the webhooks it names it means: give webhooks too", c.Name)
	}
	for _, op := range c.RequireOperations {
		if !slices.Contains(variantOps, op) {
			bad("requireOperations", "requireOperations %q: want UPDATE or DELETE (the variants of a CREATE case)", op)
		}
	}
	if len(c.RequireOperations) > 0 && c.Operation != "CREATE" && c.Record == "" && len(c.Review) == 0 {
		bad("requireOperations", "requireOperations is for a CREATE case: its object is checked as updated and deleted")
	}
	errs = append(errs, validateExpect(l, n)...)
	for _, p := range c.Ignore {
		if !strings.HasPrefix(p, "/") {
			bad("ignore", "ignore %q: want a JSON pointer such as /metadata/labels/x (* for any key or index)", p)
		}
	}
	return errs
}

func validateExpect(l *Loaded, n *yaml.Node) []error {
	c, e, file := &l.Case, &l.Case.Expect, l.File.Path
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, posError(file, pathLine(n, field), format, args...))
	}
	if l.expect == nil {
		bad("name", "case %q has no expect: give expect.result (%s)", c.Name, strings.Join(Results, ", "))
		return errs
	}
	if !slices.Contains(Results, e.Result) {
		bad("expect.result", "expect.result %q: want one of %s", e.Result, strings.Join(Results, ", "))
	}
	conv := c.Conversion != nil || isConversionReview(c.Review)
	switch {
	case conv && !slices.Contains([]string{Converted, Failed, AsRecorded, Error}, e.Result):
		bad("expect.result", "a conversion case expects converted, failed, error or asRecorded, not %s", e.Result)
	case !conv && (e.Result == Converted || e.Result == Failed):
		bad("expect.result", "%s is for conversion cases: an admission case expects allowed, denied, patched, error, skip or asRecorded", e.Result)
	case e.Result == AsRecorded && c.Record == "":
		bad("expect.result", "asRecorded needs a record: the recording holds the answer")
	}
	if e.MessageRegexp != "" {
		if _, err := regexp.Compile(e.MessageRegexp); err != nil {
			bad("expect.messageRegexp", "expect.messageRegexp: %v", err)
		}
	}
	if has(e.Object, e.ObjectFile) && e.Result != Patched && e.Result != Converted {
		bad("expect.object", "expect.object is the object after a patch (patched) or a conversion (converted), not for %s", e.Result)
	}
	if len(e.Object) > 0 && e.ObjectFile != "" {
		bad("expect.objectFile", "give expect.object or expect.objectFile, not both")
	}
	if len(e.Patch) > 0 && e.Result != Patched {
		bad("expect.patch", "expect.patch is for patched, not %s", e.Result)
	}
	if e.Result == Patched && !has(e.Object, e.ObjectFile) && len(e.Patch) == 0 {
		bad("expect.result", "patched needs expect.object (the object after the patch) or expect.patch (the operations)")
	}
	if e.Result == Converted && !has(e.Object, e.ObjectFile) {
		bad("expect.result", "converted needs expect.object: the object in the desired version")
	}
	for name, we := range c.ExpectWebhooks {
		switch {
		case !slices.Contains([]string{Allowed, Denied, Patched, Error}, we.Result):
			bad("expectWebhooks", "expectWebhooks[%q].result %q: want one of allowed, denied, patched, error", name, we.Result)
		case we.Result == Patched && !has(we.Object, we.ObjectFile) && len(we.Patch) == 0:
			bad("expectWebhooks", "expectWebhooks[%q]: patched needs object (the object as it left that webhook) or patch", name)
		}
	}
	return errs
}

func has(inline []byte, file string) bool { return len(inline) > 0 || file != "" }

// isConversionReview reports a review that is a ConversionReview.
func isConversionReview(review []byte) bool {
	return strings.Contains(string(review), `"ConversionReview"`)
}

var _ = fmt.Sprintf
