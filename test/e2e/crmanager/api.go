package main

import (
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
}

// WidgetV2 is v2, a spoke: v1's size is its count.
type WidgetV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetV2Spec `json:"spec,omitempty"`
}

// WidgetV2Spec is v2's spec.
type WidgetV2Spec struct {
	Count int32  `json:"count,omitempty"`
	Color string `json:"color,omitempty"`
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
	h.Spec = WidgetSpec{Size: w.Spec.Count, Color: w.Spec.Color}
	return nil
}

// dropV2Color makes v2 a spoke that lacks a field the hub keeps
// (--drop-v2-color): the hub's color is lost on the way to v2, so a round
// trip v1->v2->v1 loses spec.color, which `hookback audit` must report.
var dropV2Color bool

// ConvertFrom converts the hub to v2.
func (w *WidgetV2) ConvertFrom(src conversion.Hub) error {
	h := src.(*Widget)
	w.ObjectMeta = h.ObjectMeta
	w.Spec = WidgetV2Spec{Count: h.Spec.Size, Color: h.Spec.Color}
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
