package controllers

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/randfill"
)

// RandomPods are pods with every field filled at random, and the keys the
// readers look up set to values that matter half the time: the input of the
// differential tests of SlimPod.
func RandomPods(n int, seed int64) []*corev1.Pod {
	f := randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).MaxDepth(6)
	out := make([]*corev1.Pod, n)
	for i := range out {
		p := &corev1.Pod{}
		f.Fill(p)
		var choice uint8
		f.Fill(&choice)
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		vals := []string{"true", "false", "yes", ""}
		if choice&1 == 0 {
			p.Annotations[AddPodNameLabelAnnotation] = vals[int(choice>>1)%len(vals)]
		}
		if choice&8 == 0 {
			p.Annotations[ExecAgentAnnotation] = vals[int(choice>>4)%len(vals)]
		}
		if choice&64 == 0 {
			p.Labels[PodNameLabel] = p.Name
		}
		p.Status.Phase = []corev1.PodPhase{corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodPending}[int(choice)%4]
		out[i] = p
	}
	return out
}

// TestSlimPodKeepsWhatReadersRead runs every reader of cached pods on
// random pods and on their slim copies: a reader whose answer changes reads
// a field SlimPod drops, which must then be added to the whitelist.
func TestSlimPodKeepsWhatReadersRead(t *testing.T) {
	readers := map[string]func(*corev1.Pod) string{
		"wantsPodNameLabel":   func(p *corev1.Pod) string { return fmt.Sprint(wantsPodNameLabel(p)) },
		"labelableName":       labelableName,
		"podNameLabelMatches": func(p *corev1.Pod) string { return fmt.Sprint(podNameLabelMatches(p)) },
		"execSubject": func(p *corev1.Pod) string {
			s, ok := execSubject(p)
			return fmt.Sprint(s, ok)
		},
	}
	for name, read := range readers {
		t.Run(name, func(t *testing.T) {
			differ := 0
			for _, p := range RandomPods(500, 1) {
				full, slim := read(p), read(SlimPod(p))
				if full != slim {
					t.Fatalf("%s reads a field SlimPod drops: %q on the pod, %q on its slim copy", name, full, slim)
				}
				if full != read(&corev1.Pod{}) {
					differ++
				}
			}
			if differ == 0 {
				t.Fatalf("%s gave the same answer for every random pod: the test proves nothing", name)
			}
		})
	}
}

func TestSlimPodIsIdempotent(t *testing.T) {
	for _, p := range RandomPods(100, 2) {
		once := SlimPod(p)
		if twice := SlimPod(once); !equality.Semantic.DeepEqual(once, twice) {
			t.Fatalf("SlimPod of a slim pod changed it:\n%#v\n%#v", once, twice)
		}
	}
}
