package lint

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/internal/report"
	"github.com/hookback/hookback/manifests"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestIgnoreAnnotationSuppresses(t *testing.T) {
	rep := lint(t, load(t, "self-deadlock-ignored.yaml"))
	if len(rep.Findings) != 1 || rep.Findings[0].Rule != "self-deadlock" || !strings.Contains(rep.Findings[0].Suppressed, "static pods") {
		t.Fatalf("want the self-deadlock suppressed with its reason:\n%s", table(t, rep))
	}
	if len(rep.Failing()) != 0 {
		t.Errorf("a suppressed finding fails the run: %+v", rep.Failing())
	}
	if !strings.Contains(rep.Summary(), "1 more suppressed") {
		t.Errorf("summary %q", rep.Summary())
	}
}

func TestIgnoreAnnotationErrors(t *testing.T) {
	cases := []struct{ name, value, want string }{
		{"no reason", "self-deadlock", `"self-deadlock" has no reason: write self-deadlock=why it is safe here`},
		{"empty reason", "self-deadlock= ", `"self-deadlock" has no reason`},
		{"unknown rule", "deadlock=fine", `no rule "deadlock" (the rules are self-deadlock,`},
		{"second entry", "chain-budget=measured; nope=x", `no rule "nope"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion("admissionregistration.k8s.io/v1")
			u.SetKind(kindValidating)
			u.SetName("x")
			u.SetAnnotations(map[string]string{IgnoreAnnotation: c.value})
			_, err := Read([]manifests.Document{{Source: "x.yaml", Index: 2, Object: u}})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "x.yaml document 2 ValidatingWebhookConfiguration/x") {
				t.Errorf("err = %v, want one naming the document and %q", err, c.want)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		name   string
		o      Options
		fields []string
	}{
		{"defaults", Options{FailOn: "error"}, nil},
		{"none", Options{FailOn: FailOnNone, Disable: []string{"chain-budget"}}, nil},
		{"unknown rule", Options{FailOn: "error", Disable: []string{"deadlock"}}, []string{"lint.Options.Disable"}},
		{"unknown severity", Options{FailOn: "fatal"}, []string{"lint.Options.FailOn"}},
		{"deadline in fractions", Options{FailOn: "error", Deadline: 2500 * time.Millisecond}, []string{"lint.Options.Deadline"}},
		{"deadline", Options{FailOn: "error", Deadline: 5 * time.Second}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.o.Validate()
			var got []string
			for _, e := range unjoin(err) {
				var fe *field.Error
				if !errors.As(e, &fe) {
					t.Fatalf("not a field error: %v", e)
				}
				got = append(got, fe.Field)
			}
			if strings.Join(got, ",") != strings.Join(c.fields, ",") {
				t.Errorf("fields %v, want %v (%v)", got, c.fields, err)
			}
		})
	}
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestDisable(t *testing.T) {
	in, err := Read(load(t, "self-deadlock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rep := Run(in, Options{FailOn: "error", Disable: []string{"self-deadlock"}})
	if len(rep.Findings) != 0 || len(rep.Rules) != len(Rules())-1 {
		t.Errorf("disabled rule ran: %d rules\n%s", len(rep.Rules), table(t, rep))
	}
}

func TestFailOn(t *testing.T) {
	cases := []struct {
		failOn string
		want   int
	}{{"error", 0}, {"warning", 1}, {"info", 1}, {FailOnNone, 0}}
	for _, c := range cases {
		t.Run(c.failOn, func(t *testing.T) {
			in, err := Read(load(t, "review-versions.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(Run(in, Options{FailOn: c.failOn}).Failing()); got != c.want {
				t.Errorf("failing %d, want %d", got, c.want)
			}
		})
	}
}

// TestSARIF: a valid 2.1.0 log with every rule, a result located at the
// webhook's line, its fix, and the suppression with its reason.
func TestSARIF(t *testing.T) {
	docs := append(load(t, "self-deadlock.yaml"), load(t, "review-versions.yaml")...)
	rep := lint(t, docs)
	var b bytes.Buffer
	if err := report.JSON(&b, rep.SARIF()); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Rules []struct{ ID, HelpURI string }
				}
			}
			Results []struct {
				RuleID, Level string
				Locations     []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
						Region           struct{ StartLine int }
					}
				}
				Properties map[string]any
			}
		}
	}
	if err := json.Unmarshal(b.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Tool.Driver.Rules) != len(Rules()) {
		t.Fatalf("log:\n%s", b.String())
	}
	res := log.Runs[0].Results
	if len(res) != 2 || res[0].RuleID != "self-deadlock" || res[0].Level != "error" || res[1].Level != "warning" {
		t.Fatalf("results:\n%s", b.String())
	}
	loc := res[0].Locations[0].PhysicalLocation
	// The webhook "- name: mpod.example.com" is line 39 of the file.
	if loc.ArtifactLocation.URI != "testdata/self-deadlock.yaml" || loc.Region.StartLine != 39 || res[0].Properties["fix"] == nil {
		t.Errorf("location %+v, properties %v", loc, res[0].Properties)
	}
}

func TestJUnit(t *testing.T) {
	rep := lint(t, append(load(t, "self-deadlock.yaml"), load(t, "review-versions.yaml")...))
	j := rep.JUnit()
	var b bytes.Buffer
	if err := j.Write(&b); err != nil {
		t.Fatal(err)
	}
	var got report.JUnit
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	// One case per rule, the two findings among them; only the error fails.
	if got.Tests != len(Rules()) || got.Failures != 1 {
		t.Errorf("tests %d failures %d:\n%s", got.Tests, got.Failures, b.String())
	}
}
