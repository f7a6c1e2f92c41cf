package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
)

// ObjectCase is an object test init turns into a case: a CREATE of it
// sent to one webhook (a CRD's rules: `test init --from-objects`).
type ObjectCase struct {
	// Source names where the object was read, for the skipped list.
	Source string
	// Object is the manifest, as JSON.
	Object json.RawMessage
	// Kind and Name name the case; Namespace is the request's.
	Kind, Name, Namespace string
	// Configuration and Webhook name the webhook the case targets.
	Configuration, Webhook string
	// Errors are the field errors its denial lists, when it lists more
	// than one: the apiserver's OpenAPI validator orders them as map
	// iteration does, so the expectation takes them in any order.
	Errors []string
}

// InitObjects writes a case file per object into dir (as Init does: never
// overwriting), each expecting what its webhook among hooks answers now,
// the case run as `hookback test` runs it.
func InitObjects(ctx context.Context, objs []ObjectCase, hooks []*Webhook, dir string, w io.Writer) (InitReport, error) {
	var files []CaseFile
	var rep InitReport
	for _, o := range objs {
		cf, err := caseFromObject(ctx, o, hooks, dir)
		if err != nil {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: %v", o.Source, err))
			continue
		}
		files = append(files, cf)
	}
	written, err := writeCases(files, dir, w, &rep)
	rep.Written = written
	return rep, err
}

// caseFromObject runs the object's case once and records its answer as
// the expectation.
func caseFromObject(ctx context.Context, o ObjectCase, hooks []*Webhook, dir string) (CaseFile, error) {
	name := strings.Join([]string{part(o.Webhook), part(o.Kind), part(o.Name), "create"}, "_")
	c := Case{Name: name, Webhooks: []string{o.Webhook}, ConfigurationKind: o.Configuration,
		Operation: "CREATE", Namespace: o.Namespace, Object: o.Object}
	l := &Loaded{Case: c, File: &File{Path: filepath.Join(dir, name+".yaml"), Kind: KindCase}}
	rows := caseRows(ctx, newMatcher(), l, Options{Webhooks: hooks, Concurrency: 1})
	if len(rows) != 1 || rows[0].Got == nil || rows[0].Got.Result == Error || rows[0].Status == Erred {
		detail := "no answer"
		if len(rows) > 0 {
			detail = rows[0].Detail
			if rows[0].Got != nil && rows[0].Got.Message != "" {
				detail = rows[0].Got.Message
			}
		}
		return CaseFile{}, fmt.Errorf("the case could not be run: %s", detail)
	}
	c.Expect = ExpectOf(*rows[0].Got)
	if re, ok := anyOrder(c.Expect.Message, o.Errors); ok && c.Expect.Result == Denied {
		c.Expect.Message, c.Expect.MessageRegexp = "", re
	}
	body, err := caseYAMLWith(objectCaseHeader, c)
	if err != nil {
		return CaseFile{}, err
	}
	return CaseFile{Name: name + ".yaml", Body: body, key: name + "\x00" + string(o.Object)}, nil
}

const objectCaseHeader = "# A hookback test case (docs/testing.md): a create of the object, and what\n# its CRD's rules answered when test init --from-objects wrote it.\n"

// anyOrder is a regexp that matches msg, which ends in errs listed as
// "[e1, e2]" (in whatever order this run gave them), with those errors in
// any order.
func anyOrder(msg string, errs []string) (string, bool) {
	inner := strings.Join(errs, ", ")
	if len(errs) < 2 || !strings.HasSuffix(msg, "]") || len(msg) < len(inner)+2 {
		return "", false
	}
	prefix, list := msg[:len(msg)-len(inner)-2], msg[len(msg)-len(inner)-2:]
	if !strings.HasPrefix(list, "[") {
		return "", false
	}
	alts := make([]string, len(errs))
	for i, e := range errs {
		if !strings.Contains(list, e) {
			return "", false
		}
		alts[i] = regexp.QuoteMeta(e)
	}
	return fmt.Sprintf(`^%s\[(?:(?:%s)(?:, |\]$)){%d}$`, regexp.QuoteMeta(prefix), strings.Join(alts, "|"), len(errs)), true
}
