package record

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// secretReview is a Secret's CREATE review; its data's value is "b2xk".
const secretReview = `{"request":{"uid":"U","object":{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"k":"b2xk"}}}}`

func answerWith(patch string) []byte {
	return []byte(`{"response":{"uid":"U","allowed":true,"patchType":"JSONPatch","patch":"` +
		base64.StdEncoding.EncodeToString([]byte(patch)) + `"}}`)
}

// patchOf decodes the patch of an answer RedactExchange returned.
func patchOf(t *testing.T, answer []byte) string {
	t.Helper()
	var doc struct{ Response struct{ Patch []byte } }
	if err := json.Unmarshal(answer, &doc); err != nil {
		t.Fatalf("answer: %v: %s", err, answer)
	}
	return string(doc.Response.Patch)
}

// TestRedactExchangePatch: a webhook that writes a Secret's data, or
// kubectl's last-applied copy of it, has the values redacted in the answer
// kept, whatever the path it writes them at; other writes are kept.
func TestRedactExchangePatch(t *testing.T) {
	applied := `{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"data\":{\"token\":\"aHVudGVyMg==\"}}`
	tests := []struct {
		name       string
		patch      string
		gone, kept []string
	}{
		{name: "one data key", patch: `[{"op":"add","path":"/data/token","value":"aHVudGVyMg=="}]`,
			gone: []string{"aHVudGVyMg=="}, kept: []string{`"/data/token","value":"` + Redacted}},
		{name: "data whole, any case", patch: `[{"op":"replace","path":"/StringData","value":{"p":"hunter2"}}]`,
			gone: []string{"hunter2"}, kept: []string{`"p":"` + Redacted}},
		{name: "whole object", patch: `[{"op":"replace","path":"","value":{"kind":"Secret","data":{"t":"aHVudGVyMg=="},"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"` + applied + `"}}}}]`,
			gone: []string{"aHVudGVyMg=="}, kept: []string{`"t":"` + Redacted}},
		{name: "last-applied annotation alone", patch: `[{"op":"add","path":"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration","value":"` + applied + `"}]`,
			gone: []string{"aHVudGVyMg=="}, kept: []string{`\"token\":\"` + Redacted}},
		{name: "last-applied annotation not JSON", patch: `[{"op":"add","path":"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration","value":"hunter2"}]`,
			gone: []string{"hunter2"}, kept: []string{`"value":"` + Redacted}},
		{name: "annotations", patch: `[{"op":"add","path":"/metadata/annotations","value":{"team":"a","kubectl.kubernetes.io/last-applied-configuration":"` + applied + `"}}]`,
			gone: []string{"aHVudGVyMg=="}, kept: []string{`"team":"a"`}},
		{name: "metadata", patch: `[{"op":"replace","path":"/metadata","value":{"name":"s","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"hunter2"}}}]`,
			gone: []string{"hunter2"}, kept: []string{`"name":"s"`}},
		{name: "other writes kept", patch: `[{"op":"add","path":"/metadata/labels","value":{"team":"a"}},{"op":"add","path":"/type","value":"Opaque"}]`,
			kept: []string{`"team":"a"`, `"Opaque"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			review, answer, err := RedactExchange([]byte(secretReview), answerWith(tc.patch))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(review), "b2xk") {
				t.Errorf("the review kept the Secret's data: %s", review)
			}
			patch := patchOf(t, answer)
			for _, g := range tc.gone {
				if strings.Contains(patch, g) {
					t.Errorf("patch keeps %q: %s", g, patch)
				}
			}
			for _, k := range tc.kept {
				if !strings.Contains(patch, k) {
					t.Errorf("patch lacks %q: %s", k, patch)
				}
			}
		})
	}
}

// TestRedactExchangeLeavesOtherKinds: a pod's patch is kept as sent.
func TestRedactExchangeLeavesOtherKinds(t *testing.T) {
	review := []byte(`{"request":{"uid":"U","object":{"kind":"Pod","metadata":{"name":"Secret-ish"}}}}`)
	answer := answerWith(`[{"op":"add","path":"/data/x","value":"kept"}]`)
	_, got, err := RedactExchange(review, answer)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(answer) {
		t.Errorf("a pod's answer changed: %s", got)
	}
}
