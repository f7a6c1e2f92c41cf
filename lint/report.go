package lint

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/hookback/hookback/internal/report"
	"github.com/hookback/hookback/manifests"
)

// Report is what Run found. It is written as a table (WriteTable), JUnit
// (JUnit), SARIF 2.1.0 (SARIF), or as itself in JSON.
type Report struct {
	Rules    []*Rule   `json:"rules"`
	Findings []Finding `json:"findings"`
	// FailOn is the least severity that fails the run, as given.
	FailOn string `json:"failOn"`
}

// Failing are the findings at or above FailOn that no annotation
// silenced.
func (r *Report) Failing() []Finding {
	var fs []Finding
	if r.FailOn == FailOnNone {
		return nil
	}
	for _, f := range r.Findings {
		if f.Suppressed == "" && f.Severity.AtLeast(Severity(r.FailOn)) {
			fs = append(fs, f)
		}
	}
	return fs
}

// Summary is one line: "3 findings: 1 error, 2 warnings (1 suppressed)".
func (r *Report) Summary() string {
	n := map[Severity]int{}
	suppressed := 0
	for _, f := range r.Findings {
		if f.Suppressed != "" {
			suppressed++
			continue
		}
		n[f.Severity]++
	}
	s := fmt.Sprintf("%d findings: %d errors, %d warnings, %d info", n[Error]+n[Warning]+n[Info], n[Error], n[Warning], n[Info])
	if suppressed > 0 {
		s += fmt.Sprintf(" (%d more suppressed by %s)", suppressed, IgnoreAnnotation)
	}
	return s
}

// WriteTable writes a block per finding: severity, rule, object, field and
// location, then the message, why (a link) and the fix.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	if len(r.Findings) == 0 {
		b.WriteString("no findings\n")
	}
	for _, f := range r.Findings {
		sev := strings.ToUpper(string(f.Severity))
		if f.Suppressed != "" {
			sev = "SUPPRESSED"
		}
		fmt.Fprintf(&b, "%-8s %s  %s %s  (%s)\n", sev, f.Rule, f.Object, f.Path, f.Location())
		fmt.Fprintf(&b, "    %s\n", f.Message)
		if f.Suppressed != "" {
			fmt.Fprintf(&b, "    suppressed: %s\n", f.Suppressed)
		}
		fmt.Fprintf(&b, "    why: %s\n", f.Link)
		if len(f.Fix) > 0 {
			p, err := json.Marshal(f.Fix)
			if err != nil {
				return fmt.Errorf("write table: %w", err)
			}
			fmt.Fprintf(&b, "    fix (JSON patch of %s): %s\n", f.Object, p)
		}
		if f.Advice != "" {
			fmt.Fprintf(&b, "    advice: %s\n", f.Advice)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// JUnit is a testsuite per rule, a testcase per finding: a failure at or
// above FailOn, passed (with the message as output) below it or
// suppressed; a rule without findings is one passed testcase.
func (r *Report) JUnit() report.JUnit {
	j := report.JUnit{Name: "hookback lint"}
	failing := map[string]bool{}
	for _, f := range r.Failing() {
		failing[f.Rule+f.Object+f.Path+f.Message] = true
	}
	for _, rule := range r.Rules {
		found := false
		for _, f := range r.Findings {
			if f.Rule != rule.ID {
				continue
			}
			found = true
			c := report.Case{Name: f.Object + " " + f.Path, Classname: rule.ID, SystemOut: f.Message}
			if failing[f.Rule+f.Object+f.Path+f.Message] {
				c.Failure = &report.Problem{Message: f.Message, Type: string(f.Severity), Text: f.Location() + "\n" + f.Link}
			}
			j.Add(rule.ID, c)
		}
		if !found {
			j.Add(rule.ID, report.Case{Name: "no findings", Classname: rule.ID})
		}
	}
	return j
}

// SARIF is the report for GitHub code scanning: every rule, a result per
// finding located at its file and line (paths relative to the working
// directory, as the repository's), the fix and field path as properties,
// suppressed findings with the annotation's reason.
func (r *Report) SARIF() report.SARIF {
	s := report.NewSARIF("hookback lint", "", "https://github.com/hookback/hookback/blob/main/docs/safety.md")
	run := &s.Runs[0]
	for _, rule := range r.Rules {
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, report.SARIFRule{ID: rule.ID, ShortDescription: report.SARIFText{Text: rule.Summary},
			HelpURI: rule.Link, DefaultConfiguration: &report.SARIFRuleDefault{Level: sarifLevel(rule.Severity)}})
	}
	for _, f := range r.Findings {
		res := report.SARIFResult{RuleID: f.Rule, Level: sarifLevel(f.Severity), Message: report.SARIFText{Text: f.Message},
			Properties: map[string]any{"path": f.Path, "object": f.Object}}
		loc := report.SARIFLocation{LogicalLocations: []report.SARIFLogical{{FullyQualifiedName: f.Object + "." + f.Path, Kind: "object"}}}
		if f.Source != "" && f.Source != manifests.StdinSource && f.Source != ClusterSource {
			loc.PhysicalLocation = &report.SARIFPhysical{ArtifactLocation: report.SARIFArtifact{URI: filepath.ToSlash(relative(f.Source))}}
			if f.Line > 0 {
				loc.PhysicalLocation.Region = &report.SARIFRegion{StartLine: f.Line}
			}
		}
		res.Locations = []report.SARIFLocation{loc}
		if len(f.Fix) > 0 {
			res.Properties["fix"] = f.Fix
		}
		if f.Advice != "" {
			res.Properties["advice"] = f.Advice
		}
		if f.Suppressed != "" {
			res.Suppressions = []report.SARIFSuppression{{Kind: "inSource", Justification: f.Suppressed}}
		}
		run.Results = append(run.Results, res)
	}
	return s
}

func sarifLevel(s Severity) string {
	switch s {
	case Error:
		return report.SARIFError
	case Warning:
		return report.SARIFWarning
	}
	return report.SARIFNote
}

// relative is p relative to the working directory when it is below it.
func relative(p string) string {
	if !filepath.IsAbs(p) {
		return p
	}
	wd, err := filepath.Abs(".")
	if err != nil {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}
