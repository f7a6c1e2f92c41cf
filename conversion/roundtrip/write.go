package roundtrip

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteReport prints a run: one line of counts with the seed that
// reproduces it, then a row per loss (version pair, path, before, after,
// round trips), per failed conversion, and last per absent field that came
// back as an empty structure.
func WriteReport(w io.Writer, rep Report) error {
	fmt.Fprintf(w, "conversion fuzz of %s (--seed %d): %d objects of %v, %d denied by the validating webhook, %d round trips, %d kept every set field\n",
		rep.CRD, rep.Seed, rep.Objects, rep.Versions, rep.Denied, rep.RoundTrips, rep.Kept)
	if rep.Clean() && len(rep.Emptied) == 0 {
		_, err := fmt.Fprintln(w, "no field lost, no conversion failed")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tVERSIONS\tPATH OR MESSAGE\tBEFORE\tAFTER\tCOUNT")
	for _, l := range rep.Losses {
		fmt.Fprintf(tw, "lost\t%s->%s->%s\t%s\t%s\t%s\t%d\n", l.From, l.Via, l.From, l.Path, l.Before, l.After, l.Count)
	}
	for _, f := range rep.Failures {
		result := "error"
		if f.Refused {
			result = "failed"
		}
		fmt.Fprintf(tw, "%s\t%s->%s\t%s\t-\t-\t%d\n", result, f.From, f.To, oneLine(f.Message), f.Count)
	}
	for _, l := range rep.Emptied {
		fmt.Fprintf(tw, "emptied\t%s->%s->%s\t%s\t%s\t%s\t%d\n", l.From, l.Via, l.From, l.Path, l.Before, l.After, l.Count)
	}
	return tw.Flush()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
