package crdvalidate

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func mustObj(t *testing.T, js string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatal(err)
	}
	return u
}
