package policy

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// decodeOptions decodes a request's options as the apiserver holds them:
// a typed meta.k8s.io/v1 CreateOptions, UpdateOptions, DeleteOptions or
// PatchOptions (anything else stays unstructured). The apiserver's CEL
// activation converts the options to unstructured on every evaluation;
// from the typed value that costs less than from an unstructured one, and
// request.options reads the same.
func decodeOptions(raw []byte) (runtime.Object, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var tm metav1.TypeMeta
	if err := utiljson.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("decode the request's options: %w", err)
	}
	var into runtime.Object
	if tm.APIVersion == "meta.k8s.io/v1" {
		switch tm.Kind {
		case "CreateOptions":
			into = &metav1.CreateOptions{}
		case "UpdateOptions":
			into = &metav1.UpdateOptions{}
		case "DeleteOptions":
			into = &metav1.DeleteOptions{}
		case "PatchOptions":
			into = &metav1.PatchOptions{}
		}
	}
	if into == nil {
		m, err := decodeRaw(raw, "options")
		if err != nil {
			return nil, err
		}
		return &unstructured.Unstructured{Object: m}, nil
	}
	if err := utiljson.Unmarshal(raw, into); err != nil {
		return nil, fmt.Errorf("decode the request's options: %w", err)
	}
	return into, nil
}
