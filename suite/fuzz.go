package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/yaml"

	"github.com/hookback/hookback/conversion"
	"github.com/hookback/hookback/conversion/roundtrip"
)

// viaFirst is the review of a conversion case: as written, or for a round
// trip (Via) with the object first converted to Via. failed is set when
// that first conversion failed: the case's outcome.
func (in *conversionInput) viaFirst(ctx context.Context, h ConversionWebhook) (review []byte, failed *Outcome, err error) {
	if in.via == "" {
		return in.review, nil, nil
	}
	there, err := json.Marshal(map[string]any{
		"apiVersion": conversion.V1, "kind": conversion.Kind,
		"request": map[string]any{"uid": string(uuid.NewUUID()), "desiredAPIVersion": in.via, "objects": []json.RawMessage{in.object}},
	})
	if err != nil {
		return nil, nil, err
	}
	o, err := convert(ctx, h, there)
	if err != nil || o.Result != Converted {
		if err == nil {
			o.Message = "to " + in.via + ": " + o.Message
		}
		return nil, &o, err
	}
	var r map[string]any
	if err := json.Unmarshal(in.review, &r); err != nil {
		return nil, nil, err
	}
	r["request"].(map[string]any)["objects"] = []json.RawMessage{o.Object}
	review, err = json.Marshal(r)
	return review, nil, err
}

// FuzzAdmitter asks the validating webhooks among hooks that the
// apiserver would call for a CREATE of an object of resource (plural) in
// its version whether they admit it, for the conversion fuzzer: the first
// denial is the answer; a webhook that could not be called is an error.
// A webhook whose rules name another version (matchPolicy Equivalent) is
// sent the object converted through convs, as the apiserver would.
func FuzzAdmitter(hooks []*Webhook, resource string, convs []ConversionWebhook) roundtrip.Admitter {
	var validating []*Webhook
	for _, w := range hooks {
		if w.Validating != nil {
			validating = append(validating, w)
		}
	}
	m := newMatcher()
	m.convs = convs
	file := &File{Path: "conversion-fuzz"}
	return func(ctx context.Context, _ string, obj map[string]any) (bool, string, error) {
		raw, err := json.Marshal(obj)
		if err != nil {
			return false, "", err
		}
		l := &Loaded{Case: Case{Name: "conversion-fuzz", Operation: "CREATE", Object: raw, Resource: resource}, File: file}
		in, err := readInput(l)
		if err != nil {
			return false, "", err
		}
		picked, err := pick(ctx, m, l, in, validating)
		if err != nil {
			return false, "", err
		}
		for _, p := range picked {
			got := callPicked(ctx, p, in, convs)
			switch got.Result {
			case Denied:
				return false, got.Message, nil
			case Error:
				return false, "", fmt.Errorf("webhook %s: %s", p.w.Name(), got.Message)
			}
		}
		return true, "", nil
	}
}

// FuzzSeeds are the objects of the suite's cases (conversion cases' and
// plain manifests'), for the conversion fuzzer to start from; the fuzzer
// keeps those of its CRD.
func FuzzSeeds(files []*File) []map[string]any {
	var out []map[string]any
	for _, f := range files {
		for _, l := range f.Cases {
			raws := [][]byte{}
			if cv := l.Conversion; cv != nil {
				if raw, err := objectOf(l, cv.Object, cv.ObjectFile); err == nil {
					raws = append(raws, raw)
				}
			}
			if raw, err := objectOf(l, l.Object, l.ObjectFile); err == nil && len(raw) > 0 {
				raws = append(raws, raw)
			}
			for _, raw := range raws {
				var obj map[string]any
				if json.Unmarshal(raw, &obj) == nil && obj != nil {
					out = append(out, obj)
				}
			}
		}
	}
	return out
}

// WriteLossCases writes a Case file into dir (made if missing) per loss
// the conversion fuzzer found: its minimal object, round-tripped through
// the version that loses the field and back, expected unchanged. A file
// already there is left as it is. It returns the files written, by
// LossKey.
func WriteLossCases(dir string, rep roundtrip.Report, group string) (map[string]string, error) {
	if len(rep.Losses) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	files := map[string]string{}
	for _, l := range rep.Losses {
		obj, err := json.Marshal(l.Object)
		if err != nil {
			return files, err
		}
		c := Case{
			Name: fmt.Sprintf("%s %s->%s->%s keeps %s", rep.CRD, l.From, l.Via, l.From, l.Path),
			Conversion: &Conversion{CRD: rep.CRD, Object: obj, Via: group + "/" + l.Via,
				DesiredAPIVersion: group + "/" + l.From},
			Expect: Expect{Result: Converted, Object: obj},
		}
		var buf bytes.Buffer
		fmt.Fprintf(&buf, "# A hookback test case (docs/testing.md) written by the conversion fuzzer (--seed %d):\n"+
			"# the round trip %s -> %s -> %s of this object loses %s (%s -> %s).\napiVersion: %s\nkind: %s\n",
			rep.Seed, l.From, l.Via, l.From, l.Path, l.Before, l.After, APIVersion, KindCase)
		body, err := yaml.Marshal(c)
		if err != nil {
			return files, err
		}
		buf.Write(body)
		path := filepath.Join(dir, "convert_"+part(rep.CRD)+"_"+part(l.From+"-"+l.Via)+"_"+part(l.Path)+".yaml")
		if _, err := os.Stat(path); err == nil {
			continue
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			return files, fmt.Errorf("write %s: %w", path, err)
		}
		files[LossKey(l)] = path
	}
	return files, nil
}

// FuzzRows are the conversion fuzzer's findings as rows of the report: a
// failing row per field lost (with the case file written for it, when
// one was) and per failed conversion, or one passing row when nothing
// was lost; then a passing row per field that was absent and came back as
// an empty structure, which no client reads apart from the absent field
// (compared strictly, the fuzzer reports those as losses instead).
func FuzzRows(rep roundtrip.Report, caseFiles map[string]string) []Row {
	name := fmt.Sprintf("conversion fuzz of %s (--seed %d)", rep.CRD, rep.Seed)
	var rows []Row
	if rep.Clean() {
		kept := "every field kept"
		if n := len(rep.Emptied); n > 0 {
			kept = fmt.Sprintf("every set field kept, %d absent fields came back as empty structures", n)
		}
		detail := fmt.Sprintf("%d objects (%d denied by the validating webhook), %d round trips through %v: %s", rep.Objects, rep.Denied, rep.RoundTrips, rep.Versions, kept)
		rows = append(rows, Row{File: "conversion-fuzz", Case: name, Webhook: rep.CRD, Status: Pass, Detail: detail})
	}
	for _, l := range rep.Losses {
		file := caseFiles[LossKey(l)]
		if file == "" {
			file = "conversion-fuzz"
		}
		rows = append(rows, Row{File: file, Case: fmt.Sprintf("%s: %s->%s->%s", name, l.From, l.Via, l.From), Webhook: rep.CRD, Status: Fail,
			Detail: fmt.Sprintf("%s lost or changed in %d round trips %s->%s->%s", l.Path, l.Count, l.From, l.Via, l.From),
			Diff:   fmt.Sprintf("%s: want %s, got %s", l.Path, l.Before, l.After)})
	}
	for _, f := range rep.Failures {
		what := "refused"
		if !f.Refused {
			what = "answered wrongly"
		}
		rows = append(rows, Row{File: "conversion-fuzz", Case: fmt.Sprintf("%s: %s->%s", name, f.From, f.To), Webhook: rep.CRD, Status: Fail,
			Detail: fmt.Sprintf("the conversion webhook %s %d conversions %s->%s: %s", what, f.Count, f.From, f.To, f.Message)})
	}
	for _, l := range rep.Emptied {
		rows = append(rows, Row{File: "conversion-fuzz", Case: fmt.Sprintf("%s: %s->%s->%s", name, l.From, l.Via, l.From), Webhook: rep.CRD, Status: Pass,
			Detail: fmt.Sprintf("%s came back as an empty structure where it was absent, %d times %s->%s->%s (no set value lost; the apiserver would store it)", l.Path, l.Count, l.From, l.Via, l.From),
			Diff:   fmt.Sprintf("%s: want %s, got %s", l.Path, l.Before, l.After)})
	}
	return rows
}

// LossKey is how FuzzRows finds the case file written for a loss.
func LossKey(l roundtrip.Loss) string { return l.From + "/" + l.Via + "/" + l.Path }
