package chain

import (
	"encoding/json"
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	admissionv1 "k8s.io/api/admission/v1"
)

// Stage is where in the chain a view was taken.
type Stage string

// The stages, in the order the apiserver reaches them.
const (
	// StageSubmitted: the first mutating observer, whose configuration sorts
	// before every other: the object after the MutatingAdmissionPolicies'
	// first round and before any webhook.
	StageSubmitted Stage = "submitted"
	// StageYours: your webhook's review and answer.
	StageYours Stage = "yours"
	// StageAfter: the last mutating observer (reinvocationPolicy IfNeeded):
	// the object after every mutating webhook of a round.
	StageAfter Stage = "after"
	// StageFinal: the validating observer: the object the validators judge.
	StageFinal Stage = "final"
)

// Identity is what every call the apiserver makes for one request shares:
// the review uid does not (each call gets its own). Name is the
// generateName on a CREATE that has one, since mutating webhooks see no
// name yet and validating ones the generated one.
type Identity struct {
	Operation   string `json:"operation"`
	Group       string `json:"group,omitempty"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	User        string `json:"user"`
	UserUID     string `json:"userUID,omitempty"`
	DryRun      bool   `json:"dryRun,omitempty"`
	// OldVersion is the oldObject's resourceVersion (UPDATE, DELETE): two
	// updates of one object in a row differ there.
	OldVersion string `json:"oldResourceVersion,omitempty"`
}

// String names the request as a log line would.
func (id Identity) String() string {
	res := id.Resource
	if id.Group != "" {
		res += "." + id.Group
	}
	if id.Subresource != "" {
		res += "/" + id.Subresource
	}
	name := id.Name
	if id.Namespace != "" {
		name = id.Namespace + "/" + name
	}
	return fmt.Sprintf("%s %s %s by %s", id.Operation, res, name, id.User)
}

// Observation is one view of a request at one stage.
type Observation struct {
	Stage Stage `json:"stage"`
	// Webhook names who took the view: your webhook's name, or the
	// observer's.
	Webhook string `json:"webhook"`
	// Path is where hookback serves the webhook: it finds your
	// configuration in the cluster (its clientConfig.url's path).
	Path string `json:"path,omitempty"`
	// UID is the review's uid (this call's alone).
	UID      string    `json:"uid"`
	At       time.Time `json:"at"`
	Identity Identity  `json:"identity"`
	// Kind is the object's group/version/kind as this call was sent.
	Kind string `json:"kind"`
	// Object is the object as this call saw it, Secrets' data redacted.
	Object json.RawMessage `json:"object,omitempty"`
	// OldObject (UPDATE, DELETE) and Groups, the requester's groups, are
	// kept of your webhook's calls only, for evaluating matchConditions;
	// OldObject is redacted like Object.
	OldObject json.RawMessage `json:"oldObject,omitempty"`
	Groups    []string        `json:"groups,omitempty"`
	// Answer is your webhook's: allowed, its message, its patch.
	Allowed bool            `json:"allowed"`
	Message string          `json:"message,omitempty"`
	Patch   json.RawMessage `json:"patch,omitempty"`
}

// IdentityOf reads the identity of a request. object is the request's
// object as received (for the generateName of a CREATE).
func IdentityOf(req *admissionv1.AdmissionRequest) Identity {
	id := Identity{Operation: string(req.Operation), Group: req.Resource.Group, Resource: req.Resource.Resource,
		Subresource: req.SubResource, Namespace: req.Namespace, Name: req.Name, User: req.UserInfo.Username,
		UserUID: req.UserInfo.UID, DryRun: req.DryRun != nil && *req.DryRun}
	if req.RequestResource != nil {
		id.Group, id.Resource, id.Subresource = req.RequestResource.Group, req.RequestResource.Resource, req.RequestSubResource
	}
	var meta struct {
		Metadata struct {
			GenerateName    string `json:"generateName"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	// jsonv2 skips what the struct does not name without decoding it: these
	// run for every view (Collector.Run), on the object and oldObject whole.
	if req.Operation == admissionv1.Create && jsonv2.Unmarshal(req.Object.Raw, &meta) == nil && meta.Metadata.GenerateName != "" {
		id.Name = "generateName:" + meta.Metadata.GenerateName
	}
	if len(req.OldObject.Raw) > 0 && jsonv2.Unmarshal(req.OldObject.Raw, &meta) == nil {
		id.OldVersion = meta.Metadata.ResourceVersion
	}
	return id
}
