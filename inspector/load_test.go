package inspector

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"strings"
	"testing"

	"github.com/hookback/hookback/load/loadplot"
)

// loadRun is a run of two steps of three, the second past the budget.
func loadRun(id string, done bool) loadplot.Run {
	return loadplot.Run{ID: id, Server: "https://127.0.0.1:6443", Namespace: "team-a", BudgetMs: 100, Planned: 3, Done: done,
		Knee: 2, KneeReason: "p99 250.0 ms passes the budget of 100 ms", Passed: true,
		Steps: []loadplot.Point{
			{Step: 1, OfferedRate: 10, AchievedRate: 10, Sent: 10, P50Ms: 5, P95Ms: 8, P99Ms: 9.5, MaxMs: 12},
			{Step: 2, OfferedRate: 50, AchievedRate: 41.5, Sent: 50, P50Ms: 40, P95Ms: 200, P99Ms: 250, MaxMs: 300,
				ErrorRate: 0.04, Errors: map[string]int{"timeout": 1, "throttled": 1}},
		}}
}

// post sends a run to the inspector as hookback load does, with extra
// headers (a browser's).
func (f *fixture) post(body []byte, hdr map[string]string) (int, string) {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.http.URL+"/load", bytes.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func TestLoadViewEmpty(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	tests := []struct {
		name, path string
		code       int
		want       string
	}{
		{name: "page says how to fill it", path: "/load", code: http.StatusOK, want: "--inspector-address"},
		{name: "no plot", path: "/load/plot.svg", code: http.StatusNotFound, want: "no load run yet"},
		{name: "no JSON", path: "/load.json", code: http.StatusNotFound, want: "no load run yet"},
		{name: "the list links to it", path: "/", code: http.StatusOK, want: `href="/load"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := f.get(tt.path)
			if code != tt.code || !strings.Contains(body, tt.want) {
				t.Errorf("GET %s = %d, want %d with %q:\n%s", tt.path, code, tt.code, tt.want, body)
			}
		})
	}
}

// A run posted after each step is shown: its steps, its knee, the plot
// (load's drawing) and the JSON; the page reloads itself while the run
// goes on, and stops once it is done.
func TestLoadViewLive(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	running := loadRun("run-1", false)
	if code, body := f.post(mustJSON(t, running), nil); code != http.StatusNoContent {
		t.Fatalf("POST /load = %d: %s", code, body)
	}
	_, page := f.get("/load")
	for _, want := range []string{`http-equiv="refresh"`, "running: step 2 of 3", "The knee: step 2", "41.5", "1 throttled, 1 timeout", "4.00%", `src="/load/plot.svg?steps=2"`} {
		if !strings.Contains(page, want) {
			t.Errorf("running page lacks %q:\n%s", want, page)
		}
	}
	code, svg := f.get("/load/plot.svg")
	var doc struct {
		XMLName   xml.Name
		Polylines []struct {
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
	}
	if err := xml.Unmarshal([]byte(svg), &doc); code != http.StatusOK || err != nil || len(doc.Polylines) != 3 {
		t.Fatalf("plot: %d %v\n%s", code, err, svg)
	}
	if n := len(strings.Fields(doc.Polylines[0].Points)); n != 2 || !strings.Contains(svg, ">knee<") {
		t.Errorf("plot has %d points a series, want 2, and the knee marked:\n%s", n, svg)
	}
	var want bytes.Buffer
	if err := running.WriteSVG(&want); err != nil || want.String() != svg {
		t.Errorf("the inspector's plot differs from loadplot's drawing (%v)", err)
	}

	done := loadRun("run-1", true)
	f.post(mustJSON(t, done), nil)
	_, page = f.get("/load")
	if strings.Contains(page, `http-equiv="refresh"`) || !strings.Contains(page, "done, every gate passed") {
		t.Errorf("a done run's page still reloads, or does not say done:\n%s", page)
	}
	_, js := f.get("/load.json")
	var got loadplot.Run
	if err := json.Unmarshal([]byte(js), &got); err != nil || !got.Done || len(got.Steps) != 2 || got.Steps[1].Errors["timeout"] != 1 {
		t.Errorf("load.json: %v %+v", err, got)
	}

	next := loadRun("run-2", false)
	next.Steps, next.Knee = nil, 0
	f.post(mustJSON(t, next), nil)
	if _, page = f.get("/load"); !strings.Contains(page, "running: step 0 of 3") {
		t.Errorf("a new run does not replace the last:\n%s", page)
	}
}

func TestLoadPostRefused(t *testing.T) {
	tooMany := loadRun("run", false)
	tooMany.Steps = make([]loadplot.Point, loadplot.MaxSteps+1)
	tests := []struct {
		name string
		body []byte
		hdr  map[string]string
		code int
		want string
	}{
		{name: "not JSON", body: []byte("<html>"), code: http.StatusBadRequest, want: "decode the load run"},
		{name: "no id", body: mustJSON(t, loadRun("", false)), code: http.StatusBadRequest, want: "id"},
		{name: "too many steps", body: mustJSON(t, tooMany), code: http.StatusBadRequest, want: "at most 1000"},
		{name: "too large", body: append([]byte(`{"id":"`+strings.Repeat("x", maxLoadBody)), '"', '}'), code: http.StatusBadRequest, want: "too large"},
		{name: "from another site", body: mustJSON(t, loadRun("run", false)), hdr: map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
			code: http.StatusForbidden, want: "cross-origin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, StoreOptions{})
			code, body := f.post(tt.body, tt.hdr)
			if code != tt.code || !strings.Contains(body, tt.want) {
				t.Errorf("POST /load = %d %q, want %d with %q", code, body, tt.code, tt.want)
			}
			if code, _ := f.get("/load.json"); code != http.StatusNotFound {
				t.Errorf("a refused run is shown (%d)", code)
			}
		})
	}
}
