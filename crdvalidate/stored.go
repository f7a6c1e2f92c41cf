package crdvalidate

import (
	"context"
	"fmt"
	"io"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/hookback/hookback/internal/report"
)

// StoredResult is one stored object's UpgradeVerdict.
type StoredResult struct {
	CRD     string   `json:"crd"`
	Kind    string   `json:"kind"`
	Name    string   `json:"name"`
	Class   string   `json:"class"`
	Message string   `json:"message,omitempty"`
	Errors  []string `json:"errors,omitempty"`
}

// StoredReport is every stored object's result.
type StoredReport []StoredResult

// storageVersion is the version the CRD stores its objects in.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// AuditStored lists every stored object of c's kind in the cluster, in c's
// storage version (the apiserver converts where needed), paged, and
// judges each with Upgrade against c: what the CRD's new version would do
// to the objects already there.
func AuditStored(ctx context.Context, client dynamic.Interface, c *CRD) (StoredReport, error) {
	gvr := schema.GroupVersionResource{Group: c.crd.Spec.Group, Version: storageVersion(c.crd), Resource: c.crd.Spec.Names.Plural}
	var out StoredReport
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := client.Resource(gvr).List(ctx, opts)
		if apierrors.IsNotFound(err) && opts.Continue == "" {
			// The cluster does not serve the resource: a CRD not yet
			// installed has nothing stored.
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", gvr, err)
		}
		for i := range list.Items {
			o := &list.Items[i]
			v, err := c.Upgrade(ctx, o)
			if err != nil {
				return nil, fmt.Errorf("judge %s %s/%s: %w", gvr, o.GetNamespace(), o.GetName(), err)
			}
			name := o.GetName()
			if ns := o.GetNamespace(); ns != "" {
				name = ns + "/" + name
			}
			out = append(out, StoredResult{CRD: c.Name, Kind: o.GetAPIVersion() + " " + o.GetKind(), Name: name,
				Class: v.Class, Message: v.Message, Errors: v.Errors})
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}

// Failing counts the objects that are not valid.
func (rep StoredReport) Failing() int {
	n := 0
	for _, r := range rep {
		if r.Class != UpgradeValid {
			n++
		}
	}
	return n
}

// WriteTable writes a row per object and a line per error.
func (rep StoredReport) WriteTable(w io.Writer) error {
	rows := make([]tableRow, len(rep))
	for i, r := range rep {
		rows[i] = tableRow{cells: []string{r.Kind, r.Name, r.Class}}
		for _, e := range r.Errors {
			rows[i].details = append(rows[i].details, "error: "+e)
		}
	}
	return writeTable(w, []string{"KIND", "NAME", "UNDER THE NEW CRD"}, rows)
}

// JUnit is a testsuite per CRD, a failure per object that is not valid.
func (rep StoredReport) JUnit() report.JUnit {
	j := report.JUnit{Name: "hookback audit --crd"}
	for _, r := range rep {
		c := report.Case{Name: r.Kind + " " + r.Name, Classname: r.CRD}
		if r.Class != UpgradeValid {
			c.Failure = &report.Problem{Message: r.Class + ": " + r.Message, Type: r.Class, Text: strings.Join(r.Errors, "\n")}
		}
		j.Add(r.CRD, c)
	}
	return j
}
