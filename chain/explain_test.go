package chain

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// explainCase is one testdata/*.json file: a joined chain, the cluster's
// configurations and policies, and the view expected of them.
type explainCase struct {
	// Registered is what the session registered for your webhooks.
	Registered Registered `json:"registered"`
	Chain      Chain      `json:"chain"`
	Catalog    struct {
		Mutating           []admissionregistrationv1.MutatingWebhookConfiguration     `json:"mutating"`
		Validating         []admissionregistrationv1.ValidatingWebhookConfiguration   `json:"validating"`
		MutatingPolicies   []admissionregistrationv1.MutatingAdmissionPolicy          `json:"mutatingPolicies"`
		MutatingBindings   []admissionregistrationv1.MutatingAdmissionPolicyBinding   `json:"mutatingBindings"`
		ValidatingPolicies []admissionregistrationv1.ValidatingAdmissionPolicy        `json:"validatingPolicies"`
		ValidatingBindings []admissionregistrationv1.ValidatingAdmissionPolicyBinding `json:"validatingBindings"`
	} `json:"catalog"`
	Annotations map[string]string `json:"auditAnnotations"`
	// Requested is the audit event's requestObject.
	Requested json.RawMessage `json:"requested"`
	Want      struct {
		// YourConfiguration is the configuration taken for yours.
		YourConfiguration string `json:"yourConfiguration"`
		Steps             []struct {
			Name    string `json:"name"`
			Round   int    `json:"round"`
			Changes []struct {
				Path, Op, By string
				Exact        bool
			} `json:"changes"`
		} `json:"steps"`
		Warnings []struct {
			Kind, Path string
		} `json:"warnings"`
		Validators []string `json:"validators"`
		// Notes are the actors named with a note (matchConditions that
		// could not be evaluated).
		Notes []string `json:"notes"`
	} `json:"want"`
}

func TestExplain(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.json: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			var tc explainCase
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &tc); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			cat := NewCatalog(tc.Catalog.Mutating, tc.Catalog.Validating, tc.Catalog.MutatingPolicies, tc.Catalog.MutatingBindings,
				tc.Catalog.ValidatingPolicies, tc.Catalog.ValidatingBindings)
			exact, err := ExactFromAnnotations(tc.Annotations)
			if err != nil {
				t.Fatal(err)
			}
			var rec *Record
			if exact != nil || tc.Requested != nil {
				rec = &Record{Exact: exact, Requested: tc.Requested}
			}
			v, err := Explain(&tc.Chain, cat, tc.Registered, nil, rec)
			if err != nil {
				t.Fatal(err)
			}
			for _, y := range v.Yours {
				if y.Configuration != tc.Want.YourConfiguration {
					t.Errorf("your call in round %d is taken as configuration %q's, want %q", y.Round, y.Configuration, tc.Want.YourConfiguration)
				}
			}
			var got []string
			for _, st := range v.Steps {
				for _, ch := range st.Changes {
					got = append(got, st.Name+" "+ch.Path+" "+ch.Op+" by "+ch.Who()+exactMark(ch.Exact))
				}
			}
			var want []string
			for _, st := range tc.Want.Steps {
				for _, ch := range st.Changes {
					want = append(want, st.Name+" "+ch.Path+" "+ch.Op+" by "+ch.By+exactMark(ch.Exact))
				}
			}
			same(t, "changes", got, want)
			got = nil
			for _, w := range v.Warnings {
				got = append(got, w.Kind+" "+w.Path)
				if w.Message == "" {
					t.Errorf("warning %s %s has no message", w.Kind, w.Path)
				}
				// The cases' configurations of yours have one webhook: a
				// warning naming one blames you for your own patch.
				if strings.Contains(w.Message, KindMutatingConfiguration+" "+tc.Want.YourConfiguration+" ") {
					t.Errorf("warning %s %s names your own configuration: %s", w.Kind, w.Path, w.Message)
				}
			}
			want = nil
			for _, w := range tc.Want.Warnings {
				want = append(want, w.Kind+" "+w.Path)
			}
			same(t, "warnings", got, want)
			got = nil
			for _, a := range v.Validators {
				got = append(got, a.String())
			}
			same(t, "validators", got, tc.Want.Validators)
			same(t, "actors with a note", noted(v), tc.Want.Notes)
		})
	}
}

// noted are the actors of v named with a note, each once, in order.
func noted(v View) []string {
	var out []string
	add := func(actors []Actor) {
		for _, a := range actors {
			if a.Note != "" && !slices.Contains(out, a.String()) {
				out = append(out, a.String())
			}
		}
	}
	for _, st := range v.Steps {
		add(st.Candidates)
		for _, ch := range st.Changes {
			add(ch.By)
		}
	}
	add(v.Validators)
	return out
}

func exactMark(exact bool) string {
	if exact {
		return " (exact)"
	}
	return ""
}

func same(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\ngot\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
