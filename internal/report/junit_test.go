package report

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

func TestJUnitCounts(t *testing.T) {
	j := JUnit{Name: "hookback test"}
	j.Add("a.yaml", Case{Name: "one"})
	j.Add("b.yaml", Case{Name: "two", Error: &Problem{Message: "no file", Type: "error"}})
	j.Add("a.yaml", Case{Name: "three", Failure: &Problem{Message: "denied", Type: "mismatch", Text: "want allowed"}})
	var b bytes.Buffer
	if err := j.Write(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), xml.Header) {
		t.Errorf("no XML header:\n%s", b.String())
	}
	var got JUnit
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Tests != 3 || got.Failures != 1 || got.Errors != 1 || len(got.Suites) != 2 {
		t.Fatalf("document %+v", got)
	}
	if a := got.Suites[0]; a.Name != "a.yaml" || a.Tests != 2 || a.Failures != 1 || a.Cases[1].Failure.Text != "want allowed" {
		t.Errorf("suite a.yaml %+v", a)
	}
}
