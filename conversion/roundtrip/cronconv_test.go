package roundtrip

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/hookback/hookback/upstream"
)

// The CronJob of conversion/roundtrip/testdata/cronjobs-crd.yaml as Go
// types, the way the kubebuilder tutorial writes them: the job template is
// value structs all the way down, so decoding an object without one and
// encoding it again writes every level, empty, with nulls for its unset
// lists
// ({"spec":{"template":{"metadata":{"creationTimestamp":null},"spec":{"containers":null}}}}).
type (
	cronJobV1 struct {
		cronMeta
		Spec   cronSpecV1 `json:"spec"`
		Status cronStatus `json:"status,omitempty"`
	}
	cronJobV2 struct {
		cronMeta
		Spec   cronSpecV2 `json:"spec"`
		Status cronStatus `json:"status,omitempty"`
	}
	cronMeta struct {
		APIVersion string         `json:"apiVersion"`
		Kind       string         `json:"kind"`
		Metadata   map[string]any `json:"metadata"`
	}
	cronSpecV1 struct {
		Schedule    string      `json:"schedule"`
		Suspend     *bool       `json:"suspend,omitempty"`
		JobTemplate jobTemplate `json:"jobTemplate"`
	}
	cronSpecV2 struct {
		Schedule    string      `json:"schedule"`
		Paused      *bool       `json:"paused,omitempty"`
		JobTemplate jobTemplate `json:"jobTemplate"`
	}
	jobTemplate struct {
		Metadata templateMeta `json:"metadata,omitempty"`
		Spec     jobSpec      `json:"spec,omitempty"`
	}
	templateMeta struct {
		Labels            map[string]string `json:"labels,omitempty"`
		CreationTimestamp *string           `json:"creationTimestamp"`
	}
	jobSpec struct {
		Parallelism *int32      `json:"parallelism,omitempty"`
		Template    podTemplate `json:"template,omitempty"`
	}
	podTemplate struct {
		Metadata templateMeta `json:"metadata,omitempty"`
		Spec     podSpec      `json:"spec,omitempty"`
	}
	podSpec struct {
		RestartPolicy string      `json:"restartPolicy,omitempty"`
		Containers    []container `json:"containers"`
	}
	container struct {
		Name  string `json:"name"`
		Image string `json:"image,omitempty"`
	}
	cronStatus struct {
		Active     []string    `json:"active,omitempty"`
		Conditions []condition `json:"conditions,omitempty"`
	}
	condition struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	}
)

// cronServer converts CronJobs through the Go types above. dropConditions
// copies only status.active, as the tutorial's conversion does (its v1
// and v2 both have status.conditions, and a round trip loses them).
type cronServer struct {
	dropConditions bool
	reviews        atomic.Int64
}

func (c *cronServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.reviews.Add(1)
	var review struct {
		APIVersion string `json:"apiVersion"`
		Request    struct {
			UID               string            `json:"uid"`
			DesiredAPIVersion string            `json:"desiredAPIVersion"`
			Objects           []json.RawMessage `json:"objects"`
		} `json:"request"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var converted []any
	for _, raw := range review.Request.Objects {
		out, err := c.convert(raw, review.Request.DesiredAPIVersion)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		converted = append(converted, out)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": review.APIVersion, "kind": "ConversionReview",
		"response": map[string]any{"uid": review.Request.UID, "result": map[string]any{"status": "Success"}, "convertedObjects": converted}})
}

// convert decodes obj in its version's type and encodes it in to's.
func (c *cronServer) convert(obj json.RawMessage, to string) (any, error) {
	var v1 cronJobV1
	var v2 cronJobV2
	if strings.HasSuffix(peekAPIVersion(obj), "/v1") {
		if err := json.Unmarshal(obj, &v1); err != nil {
			return nil, err
		}
	} else {
		if err := json.Unmarshal(obj, &v2); err != nil {
			return nil, err
		}
		v1 = cronJobV1{cronMeta: v2.cronMeta, Status: c.status(v2.Status),
			Spec: cronSpecV1{Schedule: v2.Spec.Schedule, Suspend: v2.Spec.Paused, JobTemplate: v2.Spec.JobTemplate}}
	}
	if strings.HasSuffix(to, "/v1") {
		v1.APIVersion = to
		return v1, nil
	}
	v2 = cronJobV2{cronMeta: v1.cronMeta, Status: c.status(v1.Status),
		Spec: cronSpecV2{Schedule: v1.Spec.Schedule, Paused: v1.Spec.Suspend, JobTemplate: v1.Spec.JobTemplate}}
	v2.APIVersion = to
	return v2, nil
}

func (c *cronServer) status(s cronStatus) cronStatus {
	if c.dropConditions {
		return cronStatus{Active: s.Active}
	}
	return s
}

func peekAPIVersion(obj json.RawMessage) string {
	var m struct {
		APIVersion string `json:"apiVersion"`
	}
	_ = json.Unmarshal(obj, &m)
	return m.APIVersion
}

// cronJobs serves c and returns a converter forwarding to it with
// hookback's answer checks, and the CRD.
func cronJobs(t *testing.T, c *cronServer) (*upstream.Converter, *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL)
	conv, err := upstream.NewConverter(upstream.Options{Base: base}, "/convert")
	if err != nil {
		t.Fatal(err)
	}
	crds, err := ReadCRDs("testdata/cronjobs-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return conv, crds[0]
}
