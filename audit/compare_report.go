package audit

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hookback/hookback/internal/report"
)

func writeComparisonTable(w io.Writer, cs []Comparison) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WEBHOOK\tPOLICY\tAGREE\tDISAGREE")
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", c.Webhook, c.Policy, c.Agreements, len(c.Disagreements))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range cs {
		for _, d := range c.Disagreements {
			if _, err := fmt.Fprintf(w, "%s vs %s: %s\n", c.Webhook, c.Policy, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// junitComparisons adds a testsuite per webhook and policy pair: one
// passing testcase holding the agreements, a failing one per disagreement.
func junitComparisons(out *report.JUnit, cs []Comparison) {
	for _, c := range cs {
		name := c.Webhook + " vs " + c.Policy
		out.Add(name, report.Case{Name: fmt.Sprintf("%d agreements", c.Agreements), Classname: name})
		for _, d := range c.Disagreements {
			out.Add(name, report.Case{
				Name: strings.TrimSpace(fmt.Sprintf("%s %s %s", d.Resource, d.object(), d.Operation)), Classname: name,
				Failure: &report.Problem{Message: d.What, Type: "disagreement", Text: d.String()},
			})
		}
	}
}
