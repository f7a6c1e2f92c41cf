package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/hookback/hookback/conversion"
)

func convObj(apiVersion, uid, name, ns string) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": "Widget", "metadata": map[string]any{"uid": uid, "name": name, "namespace": ns}, "spec": map[string]any{"size": 1}}
}

func convRequest(t *testing.T, version string) conversion.Request {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{"apiVersion": version, "kind": "ConversionReview", "request": map[string]any{
		"uid": "u1", "desiredAPIVersion": "example.com/v1",
		"objects": []any{convObj("example.com/v2", "o1", "a", "ns"), convObj("example.com/v2", "o2", "b", "ns")}}})
	req, err := conversion.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func convAnswer(version string, resp map[string]any) string {
	b, _ := json.Marshal(map[string]any{"apiVersion": version, "kind": "ConversionReview", "response": resp})
	return string(b)
}

func success(objs ...any) map[string]any {
	return map[string]any{"uid": "u1", "result": map[string]any{"status": "Success"}, "convertedObjects": objs}
}

func TestCheckConversion(t *testing.T) {
	const v1, v1beta1 = conversion.V1, conversion.V1beta1
	good := []any{convObj("example.com/v1", "o1", "a", "ns"), convObj("example.com/v1", "o2", "b", "ns")}
	tests := []struct {
		name, version, answer, wantErr string
	}{
		{name: "v1 success", version: v1, answer: convAnswer(v1, success(good...))},
		{name: "v1beta1 success", version: v1beta1, answer: convAnswer(v1beta1, success(good...))},
		{name: "failure with message", version: v1, answer: convAnswer(v1, map[string]any{"uid": "u1", "result": map[string]any{"status": "Failure", "message": "cannot"}})},
		{name: "failure without message", version: v1, answer: convAnswer(v1, map[string]any{"uid": "u1", "result": map[string]any{"status": "Failure"}}),
			wantErr: "upstream answered Failure without a message"},
		{name: "other status", version: v1, answer: convAnswer(v1, map[string]any{"uid": "u1", "result": map[string]any{"status": "Done"}}),
			wantErr: `upstream answered result status "Done": want Success or Failure`},
		{name: "wrong uid", version: v1, answer: convAnswer(v1, map[string]any{"uid": "u2", "result": map[string]any{"status": "Success"}}),
			wantErr: `upstream answered uid "u2" for request "u1"`},
		{name: "other review version", version: v1, answer: convAnswer(v1beta1, success(good...)),
			wantErr: "upstream answered apiextensions.k8s.io/v1beta1 to a apiextensions.k8s.io/v1 review"},
		{name: "no response", version: v1, answer: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`, wantErr: "upstream answer has no response"},
		{name: "not json", version: v1, answer: "<html>", wantErr: "upstream answer is not a ConversionReview"},
		{name: "too few", version: v1, answer: convAnswer(v1, success(good[0])), wantErr: "upstream converted 1 objects of 2 sent"},
		{name: "wrong apiVersion", version: v1, answer: convAnswer(v1, success(good[0], convObj("example.com/v2", "o2", "b", "ns"))),
			wantErr: `upstream converted object 2 (ns/b) to apiVersion "example.com/v2", want "example.com/v1"`},
		{name: "uid changed", version: v1, answer: convAnswer(v1, success(good[0], convObj("example.com/v1", "x", "b", "ns"))),
			wantErr: `upstream changed the uid of object 2 (ns/b) from "o2" to "x"`},
		{name: "name changed", version: v1, answer: convAnswer(v1, success(convObj("example.com/v1", "o1", "z", "ns"), good[1])),
			wantErr: `upstream changed the name of object 1 from "a" to "z"`},
		{name: "namespace changed", version: v1, answer: convAnswer(v1, success(good[0], convObj("example.com/v1", "o2", "b", "other"))),
			wantErr: `upstream changed the namespace of object 2 (ns/b) to "other"`},
		{name: "case-insensitive field refused", version: v1, answer: strings.Replace(convAnswer(v1, success(good...)), `"uid":"u1"`, `"UID":"u1"`, 1),
			wantErr: `upstream answered uid "" for request "u1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckConversion(convRequest(t, tt.version), []byte(tt.answer))
			if tt.wantErr == "" && err != nil {
				t.Fatalf("err = %v, want none", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestConverterForwards(t *testing.T) {
	var gotPath, gotBody string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath = r.URL.Path
		var b bytes.Buffer
		_, _ = b.ReadFrom(http.MaxBytesReader(w, r.Body, 1<<20))
		gotBody = b.String()
		_, _ = w.Write([]byte(convAnswer(conversion.V1, success(convObj("example.com/v1", "o1", "a", "ns"), convObj("example.com/v1", "o2", "b", "ns")))))
	}))
	defer up.Close()
	base, _ := url.Parse(up.URL)
	c, err := NewConverter(Options{Base: base}, "/convert")
	if err != nil {
		t.Fatal(err)
	}
	req := convRequest(t, conversion.V1)
	ans := c.Convert(context.Background(), req)
	if ans.Failure != "" || len(ans.Body) == 0 {
		t.Fatalf("answer = %+v, want the upstream's body", ans)
	}
	if gotPath != "/convert" || gotBody != string(req.Raw) {
		t.Errorf("upstream got %s %q, want /convert and the review unchanged", gotPath, gotBody)
	}
}

func TestConverterUpstreamDown(t *testing.T) {
	addr := closedAddr(t)
	base, _ := url.Parse("http://" + addr)
	c, err := NewConverter(Options{Base: base}, "/convert")
	if err != nil {
		t.Fatal(err)
	}
	ans := c.Convert(context.Background(), convRequest(t, conversion.V1))
	want := "nothing listens on " + addr + ": is your webhook running?"
	if !strings.Contains(ans.Failure, want) || ans.Body != nil {
		t.Fatalf("answer = %+v, want failure %q", ans, want)
	}
}
