package loadplot

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

func TestWriteSVG(t *testing.T) {
	tests := []struct {
		name      string
		run       Run
		points    int
		knee, bud bool
	}{
		{name: "no step yet", run: Run{ID: "a", BudgetMs: 1000}},
		{name: "a ramp past the budget", points: 2, knee: true, bud: true, run: Run{ID: "a", BudgetMs: 100, Knee: 2, Steps: []Point{
			{Step: 1, OfferedRate: 10, P50Ms: 5, P95Ms: 8, P99Ms: 9}, {Step: 2, OfferedRate: 20, P50Ms: 50, P95Ms: 90, P99Ms: 150}}}},
		// The budget line is left out when it would squash the curves.
		{name: "far under the budget", points: 1, run: Run{ID: "a", BudgetMs: 1000, Steps: []Point{{Step: 1, OfferedRate: 10, P50Ms: 1, P95Ms: 2, P99Ms: 3}}}},
		{name: "a knee beyond the steps is not drawn", points: 1, run: Run{ID: "a", Knee: 5, Steps: []Point{{Step: 1, OfferedRate: 10, P99Ms: 3}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.run.WriteSVG(&b); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				XMLName   xml.Name
				Polylines []struct {
					Points string `xml:"points,attr"`
				} `xml:"polyline"`
			}
			if err := xml.Unmarshal(b.Bytes(), &doc); err != nil || doc.XMLName.Local != "svg" || len(doc.Polylines) != 3 {
				t.Fatalf("not an SVG of three series (%v):\n%s", err, b.String())
			}
			if n := len(strings.Fields(doc.Polylines[2].Points)); n != tt.points {
				t.Errorf("%d points, want %d", n, tt.points)
			}
			if got := strings.Contains(b.String(), ">knee<"); got != tt.knee {
				t.Errorf("knee marked %v, want %v", got, tt.knee)
			}
			if got := strings.Contains(b.String(), ">budget "); got != tt.bud {
				t.Errorf("budget marked %v, want %v", got, tt.bud)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		run  Run
		want string
	}{
		{name: "fine", run: Run{ID: "ns-1", Knee: 1, Steps: []Point{{Step: 1}}}},
		{name: "no id", run: Run{}, want: "id"},
		{name: "knee beyond the steps", run: Run{ID: "a", Knee: 2, Steps: []Point{{Step: 1}}}, want: "knee 2"},
		{name: "too many steps", run: Run{ID: "a", Steps: make([]Point, MaxSteps+1)}, want: "at most"},
		{name: "negative latency", run: Run{ID: "a", Steps: []Point{{Step: 1, P99Ms: -1}}}, want: "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}
