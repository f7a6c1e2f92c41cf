package main

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
)

// Group is the API group of the Widget CRD (e2e/crmanager/config/crd).
const Group = "e2e.hookback.dev"

var (
	v1GV = schema.GroupVersion{Group: Group, Version: "v1"}
	v2GV = schema.GroupVersion{Group: Group, Version: "v2"}
)

// Widget is v1, the storage version and the conversion hub: spec.size.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec `json:"spec,omitempty"`
}

// WidgetSpec is v1's spec.
type WidgetSpec struct {
	Size  int32  `json:"size,omitempty"`
	Color string `json:"color,omitempty"`
	// Template is declared only by the CRD variant
	// config/crd/variants/widgets_with_template.yaml.
	Template *WidgetTemplate `json:"template,omitempty"`
}

// WidgetTemplate is shaped as a pod template is, value structs all the way
// down (as the kubebuilder tutorial's JobTemplate): once made, it encodes
// every level, empty or not, with nulls for unset slices.
type WidgetTemplate struct {
	Metadata metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec     PartSpec          `json:"spec,omitempty"`
}

// PartSpec is the template's spec.
type PartSpec struct {
	Parts  []string `json:"parts"`
	Finish Finish   `json:"finish,omitempty"`
}

// Finish is the parts' finish.
type Finish struct {
	Coat   string   `json:"coat,omitempty"`
	Layers []string `json:"layers"`
}

// WidgetV2 is v2, a spoke: v1's size is its count.
type WidgetV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetV2Spec `json:"spec,omitempty"`
}

// WidgetV2Spec is v2's spec.
type WidgetV2Spec struct {
	Count    int32           `json:"count,omitempty"`
	Color    string          `json:"color,omitempty"`
	Template *WidgetTemplate `json:"template,omitempty"`
}

// WidgetList and WidgetV2List are the list kinds the scheme needs.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

type WidgetV2List struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WidgetV2 `json:"items"`
}

func (w *Widget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func (w *WidgetV2) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

func (l *WidgetList) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = make([]Widget, len(l.Items))
	for i := range l.Items {
		c.Items[i] = *l.Items[i].DeepCopyObject().(*Widget)
	}
	return &c
}

func (l *WidgetV2List) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = make([]WidgetV2, len(l.Items))
	for i := range l.Items {
		c.Items[i] = *l.Items[i].DeepCopyObject().(*WidgetV2)
	}
	return &c
}

// Hub marks v1 as the hub.
func (*Widget) Hub() {}

var _ conversion.Convertible = (*WidgetV2)(nil)

// ConvertTo converts v2 to the hub.
func (w *WidgetV2) ConvertTo(dst conversion.Hub) error {
	h := dst.(*Widget)
	h.ObjectMeta = w.ObjectMeta
	h.Spec = WidgetSpec{Size: w.Spec.Count, Color: w.Spec.Color, Template: copyTemplate(w.Spec.Template)}
	return nil
}

// dropV2Color makes v2 a spoke that lacks a field the hub keeps
// (--drop-v2-color): the hub's color is lost on the way to v2, so a round
// trip v1->v2->v1 loses spec.color, which `hookback audit` must report.
var dropV2Color bool

// refuseV2Color is a color v2 cannot hold (--refuse-v2-color): a widget of
// that color does not convert to v2, as a CronJob with schedule "@hourly"
// does not in the kubebuilder tutorial. Reads in v2 of such a widget fail,
// and so does its admission by a webhook registered for v2.
var refuseV2Color string

// materializeEmpty makes the conversions copy the template as a
// conversion between value-typed fields does (--materialize-empty; the
// kubebuilder tutorial's spec.jobTemplate is a struct, not a pointer): an
// absent template comes back made, as empty structures and nulls
// ({"metadata":{},"spec":{"finish":{"layers":null},"parts":null}}), which
// the apiserver would store without the nulls. No set value is lost.
var materializeEmpty bool

// copyTemplate copies a template for the other version.
func copyTemplate(t *WidgetTemplate) *WidgetTemplate {
	if t == nil && !materializeEmpty {
		return nil
	}
	var c WidgetTemplate
	if t != nil {
		c = *t
	}
	return &c
}

// ConvertFrom converts the hub to v2.
func (w *WidgetV2) ConvertFrom(src conversion.Hub) error {
	h := src.(*Widget)
	if refuseV2Color != "" && h.Spec.Color == refuseV2Color {
		return fmt.Errorf("cannot convert widget %s to v2: v2 has no color %q", h.Name, h.Spec.Color)
	}
	w.ObjectMeta = h.ObjectMeta
	w.Spec = WidgetV2Spec{Count: h.Spec.Size, Color: h.Spec.Color, Template: copyTemplate(h.Spec.Template)}
	if dropV2Color {
		w.Spec.Color = ""
	}
	return nil
}

func addToScheme(s *runtime.Scheme) error {
	s.AddKnownTypeWithName(v1GV.WithKind("Widget"), &Widget{})
	s.AddKnownTypeWithName(v1GV.WithKind("WidgetList"), &WidgetList{})
	s.AddKnownTypeWithName(v2GV.WithKind("Widget"), &WidgetV2{})
	s.AddKnownTypeWithName(v2GV.WithKind("WidgetList"), &WidgetV2List{})
	metav1.AddToGroupVersion(s, v1GV)
	metav1.AddToGroupVersion(s, v2GV)
	return nil
}
