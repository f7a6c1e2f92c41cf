package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// TestMain lets the test binary be the floor process, as the bench binary
// is when the latency section starts one.
func TestMain(m *testing.M) {
	if spec := os.Getenv(convProxyEnv); spec != "" {
		if err := runConvProxy(spec); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	if spec := os.Getenv(floorEnv); spec != "" {
		if err := runFloor(spec); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestFloorProcess runs the mutating floor as a child process and checks
// what the apiserver relies on: the uid echoed, the precomputed patch on
// the mutating paths, none on the validating one, and every call counted.
func TestFloorProcess(t *testing.T) {
	p, err := startFloorProcess("bench", true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	want, err := builtinPatches("bench")
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		path  string
		patch bool
	}{
		{path: "/validate"},
		{path: "/mutate-pod-lifespan", patch: true},
		{path: "/mutate-pod-sidecar", patch: true},
	} {
		t.Run(tc.path, func(t *testing.T) {
			body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-` + tc.path + `"}}`
			resp, err := p.client.Post("https://"+p.addr+tc.path, "application/json", bytes.NewReader([]byte(body)))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var review admissionv1.AdmissionReview
			if err := json.NewDecoder(resp.Body).Decode(&review); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, decode: %v", resp.StatusCode, err)
			}
			r := review.Response
			if r == nil || string(r.UID) != "u-"+tc.path || !r.Allowed {
				t.Fatalf("response %+v: want the uid echoed and allowed", r)
			}
			if got := string(r.Patch); tc.patch && got != string(want[tc.path]) || !tc.patch && got != "" {
				t.Errorf("patch %s, want the precomputed one: %v", got, tc.patch)
			}
			n, took, err := p.calls()
			if err != nil || n != int64(i+1) || took <= 0 {
				t.Errorf("calls %d (took %v, %v), want %d with their time", n, took, err, i+1)
			}
		})
	}
}
