package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/suite"
	"github.com/hookback/hookback/upstream"
)

// suiteCases is how many cases BenchmarkSuite runs per op.
const suiteCases = 1000

// BenchmarkSuite measures `hookback test`'s work for 1,000 admission cases
// (case files as test init writes them, loaded, matched against a
// webhook's rules and namespaceSelector with the apiserver's predicates,
// sent through start's forwarder and answer checks over loopback TLS,
// compared, eight in flight) against its anchor: the same 1,000 reviews
// POSTed straight to the same upstream, eight in flight, over loopback TLS
// keep-alive. One op is the whole suite; docs/performance.md reports it.
func BenchmarkSuite(b *testing.B) {
	up := httptest.NewTLSServer(http.HandlerFunc(answerByName))
	defer up.Close()
	dir := b.TempDir()
	reviews := writeCases(b, dir)
	base, _ := url.Parse(up.URL)
	fwd, err := upstream.New(upstream.Options{Base: base, Insecure: true}, "/validate")
	if err != nil {
		b.Fatal(err)
	}
	w := &suite.Webhook{Configuration: "bench", Path: "/validate", Handler: fwd, Validating: &admissionregistrationv1.ValidatingWebhook{
		Name: "vpod.bench.example.com", AdmissionReviewVersions: []string{"v1"},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"bench": "yes"}},
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}}
	direct := up.Client()
	direct.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // loopback bench
	direct.Transport.(*http.Transport).MaxIdleConnsPerHost = 8

	b.Run("direct-1000-reviews", func(b *testing.B) {
		for b.Loop() {
			postAll(b, direct, up.URL+"/validate", reviews)
		}
	})
	b.Run("hookback-test-1000-cases", func(b *testing.B) {
		for b.Loop() {
			files, err := suite.Load([]string{dir})
			if err != nil {
				b.Fatal(err)
			}
			rows := suite.Run(context.Background(), files, suite.Options{Webhooks: []*suite.Webhook{w}, Concurrency: 8})
			if c := suite.Count(rows); c.Passed != suiteCases {
				b.Fatalf("%+v", c)
			}
		}
	})
}

// answerByName denies pods named deny-*, allows the others.
func answerByName(w http.ResponseWriter, r *http.Request) {
	var rv struct {
		APIVersion string `json:"apiVersion"`
		Request    struct {
			UID  string `json:"uid"`
			Name string `json:"name"`
		} `json:"request"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&rv); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp := map[string]any{"uid": rv.Request.UID, "allowed": true}
	if strings.HasPrefix(rv.Request.Name, "deny-") {
		resp = map[string]any{"uid": rv.Request.UID, "allowed": false, "status": map[string]any{"code": 403, "message": "no to " + rv.Request.Name}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": rv.APIVersion, "kind": "AdmissionReview", "response": resp})
}

// writeCases writes suiteCases case files, half denied, and returns the
// reviews they hold.
func writeCases(b *testing.B, dir string) [][]byte {
	var reviews [][]byte
	for i := range suiteCases {
		name, expect := fmt.Sprintf("pod-%04d", i), "{result: allowed}"
		if i%2 == 0 {
			name, expect = fmt.Sprintf("deny-%04d", i), fmt.Sprintf("{result: denied, code: 403, message: no to deny-%04d}", i)
		}
		c := fmt.Sprintf(`apiVersion: hookback.dev/v1alpha1
kind: Case
operation: CREATE
namespace: team-a
namespaceLabels: {bench: "yes"}
object: {apiVersion: v1, kind: Pod, metadata: {name: %s, labels: {app: web}}, spec: {containers: [{name: app, image: nginx:1.27}]}}
expect: %s
`, name, expect)
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(c), 0o644); err != nil {
			b.Fatal(err)
		}
		reviews = append(reviews, []byte(fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-%d","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"name":%q,"namespace":"team-a","operation":"CREATE","userInfo":{"username":"hookback-test"},"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"nginx:1.27"}]}}}}`, i, name, name)))
	}
	return reviews
}

// postAll POSTs every review, eight in flight, and checks each answer.
func postAll(b *testing.B, c *http.Client, target string, reviews [][]byte) {
	next := make(chan []byte)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for body := range next {
				resp, err := c.Post(target, "application/json", bytes.NewReader(body))
				if err != nil {
					b.Error(err)
					continue
				}
				out, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(`"response"`)) {
					b.Errorf("status %d: %s", resp.StatusCode, out)
				}
			}
		})
	}
	for _, r := range reviews {
		next <- r
	}
	close(next)
	wg.Wait()
}
