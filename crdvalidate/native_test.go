package crdvalidate

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/openapi"
	"k8s.io/client-go/openapi/openapitest"
)

const nativeCorpus = "../testdata/crdvalidate/native"

// TestNative judges built-in kinds against the bundled OpenAPI schemas
// (and the cluster's, through client-go's OpenAPI client): the schema's
// checks with the apiserver's messages, unknown fields as its warnings or
// Strict's error.
func TestNative(t *testing.T) {
	appsV1, err := Bundled{}.Document("apis/apps/v1")
	if err != nil || appsV1 == nil {
		t.Fatalf("bundled apps/v1: %v", err)
	}
	cluster := ClusterSchemas(openapitest.FakeClient{PathsMap: map[string]openapi.GroupVersion{
		"apis/apps/v1": openapitest.FakeGroupVersion{GVSpec: appsV1}}})
	for _, tc := range []struct {
		name, file      string
		schemas         NativeSchemas
		fieldValidation string
		allowed         bool
		wantErrors      []string
		wantWarnings    []string
		wantProblem     string
	}{
		{name: "valid deployment", file: "deployment.yaml", allowed: true},
		{name: "valid configmap", file: "configmap.yaml", allowed: true},
		{name: "valid deployment, cluster's schema", file: "deployment.yaml", schemas: cluster, allowed: true},
		{name: "wrong type", file: "deployment-wrong-type.yaml",
			wantErrors: []string{`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`}},
		{name: "wrong type, cluster's schema", file: "deployment-wrong-type.yaml", schemas: cluster,
			wantErrors: []string{`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`}},
		{name: "unknown field warns", file: "deployment-unknown-field.yaml", allowed: true,
			wantWarnings: []string{`unknown field "spec.template.spec.containers[0].imagePullPolicyy"`}},
		{name: "unknown field under Strict", file: "deployment-unknown-field.yaml", fieldValidation: FieldValidationStrict,
			wantErrors: []string{`Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.template.spec.containers[0].imagePullPolicyy"`}},
		{name: "core kind named as the apiserver names it", file: "pod-wrong-type.yaml",
			wantErrors: []string{`spec.containers[0].ports[0].containerPort: Invalid value: "string": spec.containers[0].ports[0].containerPort in body must be of type integer: "string"`}},
		{name: "empty secret value", file: "secret.yaml", allowed: true},
		{name: "kind the cluster's schemas lack", file: "configmap.yaml", schemas: cluster,
			wantProblem: "v1 has no schema for ConfigMap among the cluster's schemas: is it served there?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Run(context.Background(), Options{Objects: []string{filepath.Join(nativeCorpus, tc.file)},
				Schemas: tc.schemas, FieldValidation: tc.fieldValidation}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep) != 1 {
				t.Fatalf("%d results, want 1", len(rep))
			}
			r := rep[0]
			if r.Problem != tc.wantProblem {
				t.Fatalf("problem %q, want %q", r.Problem, tc.wantProblem)
			}
			if tc.wantProblem != "" {
				return
			}
			if r.Allowed != tc.allowed || !slices.Equal(r.Errors, tc.wantErrors) || !slices.Equal(r.Warnings, tc.wantWarnings) {
				t.Errorf("allowed %v, errors %q, warnings %q; want %v, %q, %q", r.Allowed, r.Errors, r.Warnings, tc.allowed, tc.wantErrors, tc.wantWarnings)
			}
			if !tc.allowed && strings.Contains(r.Message, ".core ") {
				t.Errorf("message %q names the strategy's stand-in group", r.Message)
			}
		})
	}
}

// TestNativeMessage: a core kind's error reads as the apiserver's.
func TestNativeMessage(t *testing.T) {
	rep, err := Run(context.Background(), Options{Objects: []string{filepath.Join(nativeCorpus, "pod-wrong-type.yaml")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `Pod "p" is invalid: spec.containers[0].ports[0].containerPort`; !strings.HasPrefix(rep[0].Message, want) {
		t.Errorf("message %q, want it to begin %q", rep[0].Message, want)
	}
}

// TestResolveRecursive: a recursive schema (apiextensions.k8s.io's
// JSONSchemaProps) cannot become a structural schema, and says so.
func TestResolveRecursive(t *testing.T) {
	d, _, err := decodeOpenAPI([]byte(`{"openapi":"3.0.0","components":{"schemas":{
		"a":{"type":"object","properties":{"b":{"$ref":"#/components/schemas/b"}}},
		"b":{"type":"object","properties":{"a":{"allOf":[{"$ref":"#/components/schemas/a"}]}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&nativeDoc{defs: d}).structural("a")
	if err == nil || !strings.Contains(err.Error(), "a refers to itself") {
		t.Errorf("error %v, want the recursion named", err)
	}
}

// TestNativeNoSchema: a built-in group-version the bundle lacks is not
// judged, and says where to look; a custom kind still asks for its CRD.
func TestNativeNoSchema(t *testing.T) {
	for _, tc := range []struct{ name, obj, want string }{
		{"old built-in version", `{"apiVersion":"apps/v1beta1","kind":"Deployment","metadata":{"name":"d"}}`,
			"apps/v1beta1 has no schema for Deployment among the bundled schemas of Kubernetes v1.36.3: judge it against the cluster's schemas instead"},
		{"custom kind", `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g"}}`,
			"no CRD given for this kind: give the CustomResourceDefinition of Gadget.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Run(context.Background(), Options{Objects: []string{"-"}}, strings.NewReader(tc.obj))
			if err != nil {
				t.Fatal(err)
			}
			if rep[0].Problem != tc.want {
				t.Errorf("problem %q, want %q", rep[0].Problem, tc.want)
			}
		})
	}
}
