package report

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

type tableOnly struct{}

func (tableOnly) WriteTable(w io.Writer) error { _, err := io.WriteString(w, "a table\n"); return err }

type both struct{ tableOnly }

func (both) JUnit() JUnit { return JUnit{Name: "both"} }

type sarifOnly struct{}

func (sarifOnly) SARIF() SARIF { return NewSARIF("t", "", "") }

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report any
		want   string
	}{
		{"json is every report's", struct{}{}, "json"},
		{"a table from WriteTable", tableOnly{}, "table, json"},
		{"junit from JUnit", both{}, "table, json, junit"},
		{"sarif from SARIF", sarifOnly{}, "json, sarif"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(Names(tc.report), ", "); got != tc.want {
				t.Errorf("Names = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCheckNamesWhatTheReportSupports(t *testing.T) {
	err := Check("junit", tableOnly{})
	if err == nil || err.Error() != `output format "junit": want one of table, json` {
		t.Errorf("Check(junit, a table-only report) = %v", err)
	}
	if err := Check("sarif", both{}); err == nil || !strings.Contains(err.Error(), "want one of table, json, junit") {
		t.Errorf("Check(an unknown format) = %v", err)
	}
	if err := Check("table", tableOnly{}); err != nil {
		t.Errorf("Check(table, a table report) = %v", err)
	}
}

func TestWrite(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "table", both{}); err != nil || b.String() != "a table\n" {
		t.Errorf("table: %q, %v", b.String(), err)
	}
	b.Reset()
	if err := Write(&b, "json", map[string]int{"a": 1}); err != nil || b.String() != "{\n  \"a\": 1\n}\n" {
		t.Errorf("json: %q, %v", b.String(), err)
	}
	b.Reset()
	if err := Write(&b, "junit", tableOnly{}); err == nil || b.Len() != 0 {
		t.Errorf("junit of a table-only report: wrote %q, err %v", b.String(), err)
	}
}
