package session

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookback/hookback/conversion"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/record"
)

const conversionCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.shop.io
spec:
  group: shop.io
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service: {namespace: shop-system, name: webhook-service, path: /convert}
      conversionReviewVersions: [v1]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.shop.io
spec:
  group: shop.io
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service: {namespace: other, name: svc, path: /convert}
      conversionReviewVersions: [v1]
`

func TestLoadConversions(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "crd.yaml"), []byte(conversionCRD), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		upstreams []plan.Upstream
		wantErr   string
	}{
		{name: "default upstream", upstreams: []plan.Upstream{{URL: "https://127.0.0.1:9443"}}},
		{name: "mapped by service", upstreams: []plan.Upstream{{Service: "shop-system/webhook-service", URL: "https://127.0.0.1:9443"},
			{Service: "other/svc", URL: "https://127.0.0.1:9444"}}},
		{name: "no upstream takes it", upstreams: []plan.Upstream{{Service: "other/svc", URL: "https://127.0.0.1:9443"}},
			wantErr: `conversion webhook of CustomResourceDefinition "widgets.shop.io": webhooks widgets.shop.io target service shop-system/webhook-service and no plan.UserWebhooks.Upstream takes them`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := resolved(plan.Options{Session: "s"})
			u, err := loadUser(plan.UserWebhooks{Manifests: []string{dir}, Upstreams: tt.upstreams}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			c, err := loadConversions(u, cfg.Log)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(c.crds) != 2 || len(c.hooks) != 2 || c.hooks[0].Path != "/convert/widgets.shop.io/convert" || c.hooks[0].CRD != "widgets.shop.io" {
				t.Fatalf("conversions %+v", c)
			}
		})
	}
}

type answerConverter struct{ body []byte }

func (a answerConverter) Convert(context.Context, conversion.Request) conversion.Answer {
	return conversion.Answer{Body: a.body}
}

func TestConversionReplayTarget(t *testing.T) {
	body := []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u","result":{"status":"Success"},"convertedObjects":[]}}`)
	c := &conversions{hooks: []conversion.Webhook{{CRD: "widgets.shop.io", Path: "/convert/widgets.shop.io/convert", Converter: answerConverter{body}}}}
	sources := map[string]string{}
	fallback := func(e record.Entry) (http.Handler, error) { return nil, errors.New("admission: " + e.Path) }
	target := c.replayTarget(fallback, sources, resolved(plan.Options{}).Log)
	if sources["convert/widgets.shop.io"] != inspector.SourceUpstream {
		t.Errorf("sources %v", sources)
	}
	review := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u","desiredAPIVersion":"shop.io/v2","objects":[]}}`
	_, diffs, err := record.ReplayOne(context.Background(), record.Entry{Webhook: "convert/widgets.shop.io", Path: "/convert/widgets.shop.io/convert",
		Review: []byte(review), Answer: body}, target)
	if err != nil || len(diffs) != 0 {
		t.Fatalf("replay: diffs %v err %v", diffs, err)
	}
	if _, err := target(record.Entry{Path: "/upstream/svc/a/b/443/x"}); err == nil || err.Error() != "admission: /upstream/svc/a/b/443/x" {
		t.Errorf("an admission path: %v, want the admissions' target", err)
	}
}
