package suite

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/yaml"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/record"
)

// defaultUser is who a manifest case's request comes from unless it says.
const defaultUser = "hookback-test"

// input is a case's request, ready to match and send.
type input struct {
	req admissionv1.AdmissionRequest
	// review, when set, is sent as it is (a review or a recording);
	// otherwise the request is wrapped in the version each webhook takes.
	review []byte
	// recorded is the recording's answer, for asRecorded.
	recorded []byte
	// recordedWebhook is the webhook a recording names, with the kind of
	// its configuration and the path it was served at.
	recordedWebhook, recordedKind, recordedPath string
	nsLabels                                    map[string]string
	// conversion, when set, makes this a conversion case.
	conversion *conversionInput
	// decoded: the object is a custom resource's request body as the
	// apiserver's decoder made it (decodedAtEntry); decodeWarnings are
	// the warnings it gave, which the apiserver returns with its answer.
	decoded        bool
	decodeWarnings []string
}

type conversionInput struct {
	crd    string
	review []byte
	group  string
	// via and object: a round trip's first hop (Conversion.Via).
	via    string
	object []byte
}

// readInput builds the request a case describes.
func readInput(l *Loaded) (*input, error) {
	c := &l.Case
	in := &input{nsLabels: c.NamespaceLabels}
	switch {
	case c.Conversion != nil:
		return conversionCase(l)
	case c.Record != "":
		b, err := readRel(l, c.Record)
		if err != nil {
			return nil, err
		}
		var e record.Entry
		if err := json.Unmarshal(b, &e); err != nil || len(e.Review) == 0 {
			return nil, fmt.Errorf("record %s is not a hookback recording (webhook, path, review, answer)", c.Record)
		}
		in.review, in.recorded = e.Review, e.Answer
		in.recordedWebhook, in.recordedKind, in.recordedPath = e.Webhook, e.ConfigurationKind, e.Path
	case len(c.Review) > 0:
		in.review = c.Review
	default:
		return in, manifestInput(l, in)
	}
	if isConversionReview(in.review) {
		return &input{conversion: &conversionInput{review: in.review, group: reviewGroup(in.review)}, recorded: in.recorded}, nil
	}
	r, err := admission.NewRequest(in.review)
	if err != nil {
		return nil, fmt.Errorf("the case's review: %w", err)
	}
	in.req = r.AdmissionRequest
	return in, nil
}

// readRel reads a file named relative to the case's suite file; YAML is
// turned into JSON.
func readRel(l *Loaded, name string) ([]byte, error) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(l.Dir(), name)
	}
	b, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return j, nil
}

func objectOf(l *Loaded, inline json.RawMessage, file string) ([]byte, error) {
	if file != "" {
		return readRel(l, file)
	}
	return inline, nil
}

// optionsKinds are the options the apiserver puts into a review per
// operation.
var optionsKinds = map[string]string{"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}

// manifestInput builds the AdmissionRequest of a plain-manifest case as
// the apiserver would.
func manifestInput(l *Loaded, in *input) error {
	c := &l.Case
	obj, err := objectOf(l, c.Object, c.ObjectFile)
	if err != nil {
		return err
	}
	old, err := objectOf(l, c.OldObject, c.OldObjectFile)
	if err != nil {
		return err
	}
	who := obj
	if len(who) == 0 {
		who = old
	}
	var m struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
	}
	if err := json.Unmarshal(who, &m); err != nil {
		return fmt.Errorf("the case's object: %w", err)
	}
	if m.APIVersion == "" || m.Kind == "" {
		return fmt.Errorf("the case's object has no apiVersion and kind")
	}
	gvk := schema.FromAPIVersionAndKind(m.APIVersion, m.Kind)
	gvr, err := resourceOf(c.Resource, gvk)
	if err != nil {
		return err
	}
	ns := c.Namespace
	if ns == "" {
		ns = m.Metadata.Namespace
	}
	user := authenticationv1.UserInfo{Username: defaultUser}
	if c.UserInfo != nil {
		user = *c.UserInfo
	}
	kind, res := metav1.GroupVersionKind(gvk), metav1.GroupVersionResource(gvr)
	dry := c.DryRun
	in.req = admissionv1.AdmissionRequest{
		UID: types.UID(uuid.NewUUID()), Kind: kind, Resource: res, SubResource: c.Subresource,
		RequestKind: &kind, RequestResource: &res, RequestSubResource: c.Subresource,
		Name: m.Metadata.Name, Namespace: ns, Operation: admissionv1.Operation(c.Operation),
		UserInfo: user, DryRun: &dry,
	}
	if len(obj) > 0 && c.Operation != "DELETE" {
		in.req.Object = runtime.RawExtension{Raw: obj}
	}
	if len(old) > 0 {
		in.req.OldObject = runtime.RawExtension{Raw: old}
	}
	if k, ok := optionsKinds[c.Operation]; ok {
		opts := map[string]any{"kind": k, "apiVersion": "meta.k8s.io/v1"}
		if dry {
			opts["dryRun"] = []string{"All"}
		}
		b, _ := json.Marshal(opts)
		in.req.Options = runtime.RawExtension{Raw: b}
	}
	return nil
}

// resourceOf reads resource: RESOURCE (the object's group and version),
// VERSION/RESOURCE (core) or GROUP/VERSION/RESOURCE; empty: guessed from
// the kind as kubectl does offline.
func resourceOf(s string, gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	parts := strings.Split(s, "/")
	switch {
	case s == "":
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		return plural, nil
	case len(parts) == 1:
		return gvk.GroupVersion().WithResource(s), nil
	case len(parts) == 2:
		return schema.GroupVersionResource{Version: parts[0], Resource: parts[1]}, nil
	case len(parts) == 3:
		return schema.GroupVersionResource{Group: parts[0], Version: parts[1], Resource: parts[2]}, nil
	}
	return schema.GroupVersionResource{}, fmt.Errorf("resource %q: want RESOURCE, VERSION/RESOURCE or GROUP/VERSION/RESOURCE", s)
}

// reviewFor wraps the request in an AdmissionReview of the first version
// the webhook takes (v1 when it takes both), or returns the case's own
// review.
func (in *input) reviewFor(versions []string) ([]byte, string, error) {
	if in.review != nil {
		return in.review, "", nil
	}
	version := ""
	for _, v := range versions {
		if v == "v1" || v == "v1beta1" {
			version = "admission.k8s.io/" + v
			break
		}
	}
	if version == "" {
		return nil, "", fmt.Errorf("admissionReviewVersions %v: hookback sends v1 or v1beta1", versions)
	}
	req := in.req
	req.UID = types.UID(uuid.NewUUID())
	b, err := json.Marshal(struct {
		APIVersion string                        `json:"apiVersion"`
		Kind       string                        `json:"kind"`
		Request    *admissionv1.AdmissionRequest `json:"request"`
	}{version, "AdmissionReview", &req})
	return b, version, err
}
