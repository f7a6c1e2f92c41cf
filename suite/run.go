package suite

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/hookback/hookback/admission"
)

// Statuses of a row.
const (
	Pass  = "PASS"
	Fail  = "FAIL"
	Erred = "ERROR"
)

// Row is one case sent to one webhook (or to none), and how it went.
type Row struct {
	File    string `json:"file"`
	Case    string `json:"case"`
	Line    int    `json:"line"`
	Webhook string `json:"webhook"`
	// Status is PASS, FAIL or ERROR (the case could not be run: a file it
	// names is missing, a webhook it names does not exist).
	Status string `json:"status"`
	Detail string `json:"detail"`
	// Diff shows, for a failure, what was expected against what came.
	Diff string `json:"diff,omitempty"`
	// Got is the answer, when one came.
	Got *Outcome `json:"got,omitempty"`
	// ServerOutput is what the --exec server wrote while the case ran.
	ServerOutput string `json:"serverOutput,omitempty"`
	// Notes are what the run found beyond the case's expectation that
	// does not fail it: a mutating webhook that changes its own output
	// again under reinvocationPolicy Never, an operation on the same
	// object the webhook's configuration never matches.
	Notes []string `json:"notes,omitempty"`

	loaded *Loaded
	// beyond: the row fails only for a check beyond the expectation
	// (reinvocation, requireOperations), which --update cannot fix.
	beyond bool
}

// Output is the --exec server's output, read by offsets.
type Output interface {
	Len() int
	Since(offset int) string
}

// Options say what the cases run against.
type Options struct {
	Webhooks    []*Webhook
	Conversions []ConversionWebhook
	// Recorded, when set (your server without its manifests), answers a
	// recorded case whose webhook is not among Webhooks: the handler of
	// your server at the path the case was recorded at. Unmatched is then
	// what a case that must be matched against your configurations shows,
	// as it cannot run.
	Recorded  func(path string) (admission.Handler, error)
	Unmatched string
	// Concurrency bounds the cases in flight; zero means 8.
	Concurrency int
	// Idempotence is what a mutating webhook that changes its own output
	// again does to its row: IdempotenceAuto ("" too), IdempotenceFail,
	// IdempotenceWarn or IdempotenceOff.
	Idempotence string
	// Server, when set, is the --exec server's output: a failing case
	// shows what it wrote meanwhile.
	Server Output
	Log    *slog.Logger
}

// Run runs every case of files and returns the rows in case order.
func Run(ctx context.Context, files []*File, opts Options) []Row {
	var cases []*Loaded
	for _, f := range files {
		cases = append(cases, f.Cases...)
	}
	n := opts.Concurrency
	if n <= 0 {
		n = 8
	}
	m := newMatcher()
	m.convs = opts.Conversions
	rows := make([][]Row, len(cases))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, len(cases)) {
		wg.Go(func() {
			for i := range next {
				rows[i] = runCase(ctx, m, cases[i], opts)
			}
		})
	}
	for i := range cases {
		next <- i
	}
	close(next)
	wg.Wait()
	return slices.Concat(rows...)
}

// runCase sends one case to its webhooks.
func runCase(ctx context.Context, m *matcher, l *Loaded, opts Options) []Row {
	start := 0
	if opts.Server != nil {
		start = opts.Server.Len()
	}
	rows := caseRows(ctx, m, l, opts)
	for i := range rows {
		rows[i].File, rows[i].Case, rows[i].Line, rows[i].loaded = l.File.Path, l.Name, l.Line, l
		if rows[i].Status != Pass && opts.Server != nil {
			rows[i].ServerOutput = serverOutput(opts.Server, start)
		}
	}
	return rows
}

// serverOutput is what the server wrote while the case ran, else the last
// lines it wrote before, marked as such.
func serverOutput(out Output, start int) string {
	if s := out.Since(start); s != "" {
		return s
	}
	all := strings.Split(strings.TrimRight(out.Since(0), "\n"), "\n")
	if len(all) == 1 && all[0] == "" {
		return "(nothing written)"
	}
	return "(nothing written while the case ran; its last lines before:)\n" + strings.Join(all[max(len(all)-20, 0):], "\n")
}

func caseRows(ctx context.Context, m *matcher, l *Loaded, opts Options) []Row {
	in, err := readInput(l)
	if err != nil {
		return []Row{{Webhook: "-", Status: Erred, Detail: err.Error()}}
	}
	if in.conversion != nil {
		return conversionRows(ctx, l, in, opts)
	}
	hooks, err := candidates(l, in, opts)
	if err != nil {
		return []Row{{Webhook: "-", Status: Erred, Detail: err.Error()}}
	}
	var recorded *Outcome
	if l.Expect.Result == AsRecorded {
		o, err := recordedOutcome(in.recorded, in.req.Object.Raw)
		if err != nil {
			return []Row{{Webhook: "-", Status: Erred, Detail: err.Error()}}
		}
		recorded = &o
	}
	rows := chainRows(ctx, m, l, in, chainOrder(hooks), recorded, opts)
	if len(rows) == 0 {
		got := &Outcome{Result: Skip}
		if l.Expect.Result == Skip {
			return []Row{{Webhook: "-", Status: Pass, Detail: "no webhook is called for this input", Got: got}}
		}
		return []Row{{Webhook: "-", Status: Fail, Got: got, Detail: "no webhook would be called for this input (rules, namespace and object selectors, matchConditions)",
			Diff: fmt.Sprintf("result: want %s, got skip (no webhook called)", l.Expect.Result)}}
	}
	return rows
}

// picked is a webhook a case goes to; outcome is set when the apiserver
// would refuse the request before calling it (a matchCondition error).
type picked struct {
	w       *Webhook
	outcome *Outcome
	// equivalent, when set, is the resource the webhook's rules name in
	// place of the request's (matchPolicy Equivalent): the review it
	// gets is in that version.
	equivalent *equivalent
	// pending: whether the apiserver calls it is decided when its turn
	// in the chain comes, with the object as the webhooks before it left
	// it (the apiserver's dispatchers call ShouldCallHook per webhook).
	pending bool
}

// pick chooses the webhooks of a case: those it names (by name or path,
// see named), or every one the apiserver would call.
func pick(ctx context.Context, m *matcher, l *Loaded, in *input, hooks []*Webhook) ([]picked, error) {
	if t := targetOf(l, in); len(t.names) > 0 {
		return named(t, hooks, Options{})
	}
	var out []picked
	for _, w := range hooks {
		ok, eq, err := m.calls(ctx, w, in)
		switch {
		case err != nil:
			out = append(out, picked{w: w, outcome: &Outcome{Result: Error, Message: err.Error()}})
		case ok:
			out = append(out, picked{w: w, equivalent: eq})
		}
	}
	return out, nil
}

// call sends the case's review to one webhook's handler, bounded by the
// webhook's timeout.
func call(ctx context.Context, w *Webhook, in *input) Outcome {
	review, _, err := in.reviewFor(w.access().GetAdmissionReviewVersions())
	if err != nil {
		return Outcome{Result: Error, Message: err.Error()}
	}
	req, err := admission.NewRequest(review)
	if err != nil {
		return Outcome{Result: Error, Message: err.Error()}
	}
	req.Timeout = w.timeout()
	ctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	if w.Schema != nil {
		return callSchema(ctx, w, req, in)
	}
	return outcomeOf(w.Handler.Handle(ctx, req), req.Object.Raw)
}

func conversionRows(ctx context.Context, l *Loaded, in *input, opts Options) []Row {
	h, err := pickConversion(in.conversion, opts.Conversions)
	if err != nil {
		return []Row{{Webhook: "-", Status: Erred, Detail: err.Error()}}
	}
	var recorded *Outcome
	if l.Expect.Result == AsRecorded {
		o, err := conversionOutcome(in.recorded)
		if err != nil {
			return []Row{{Webhook: h.CRD, Status: Erred, Detail: err.Error()}}
		}
		recorded = &o
	}
	review, failed, err := in.conversion.viaFirst(ctx, h)
	if err != nil {
		return []Row{{Webhook: h.CRD, Status: Erred, Detail: err.Error()}}
	}
	if failed != nil {
		row := Row{Webhook: h.CRD, Got: failed}
		row.Status, row.Detail, row.Diff = judge(l, *failed, recorded)
		return []Row{row}
	}
	got, err := convert(ctx, h, review)
	if err != nil {
		return []Row{{Webhook: h.CRD, Status: Erred, Detail: err.Error()}}
	}
	row := Row{Webhook: h.CRD, Got: &got}
	row.Status, row.Detail, row.Diff = judge(l, got, recorded)
	return []Row{row}
}
