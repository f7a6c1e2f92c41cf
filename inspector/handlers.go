package inspector

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookback/hookback/record"
	"github.com/hookback/hookback/suite"
)

// streamKeepAlive is how often an idle stream sends a comment, so proxies
// and the browser see it alive.
const streamKeepAlive = 15 * time.Second

// streamCoalesce is how long a stream waits after a new review for more to
// arrive before it writes. Each write makes the browser lay out and paint
// the list again, on the machine hookback answers the apiserver from: at a
// hundred admissions a second, two writes a second instead of a hundred
// keep the page's cost to hookback small (bench/JOURNAL.md, "One inspector
// page open at 100 admissions/s"), and half a
// second still reads as live.
const streamCoalesce = 500 * time.Millisecond

// replayTimeout bounds one replay: the apiserver's own limit is 30s.
const replayTimeout = 30 * time.Second

// Handler serves the pages on their own mux.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.list)
	mux.HandleFunc("GET /stream", s.stream)
	mux.HandleFunc("GET /reviews/{id}", s.detail)
	mux.HandleFunc("GET /reviews/{id}/entry.json", s.download)
	mux.HandleFunc("GET /reviews/{id}/case.yaml", s.downloadCase)
	mux.HandleFunc("POST /reviews/{id}/replay", s.replay)
	mux.HandleFunc("GET /load", s.loadView)
	mux.HandleFunc("GET /load/plot.svg", s.loadPlot)
	mux.HandleFunc("GET /load.json", s.loadJSON)
	mux.HandleFunc("POST /load", s.postLoad)
	mux.HandleFunc("POST /fault", s.setFault)
	static, _ := fs.Sub(assets, "assets/static")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	return s.guard(mux)
}

// guard refuses requests for a foreign Host (DNS rebinding) unless the
// inspector is exposed, and state-changing requests from another origin,
// and sets headers that keep the pages to their own resources.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.opts.Expose && !loopbackHost(r.Host) {
			http.Error(w, "the inspector answers only to a loopback host name", http.StatusMisdirectedRequest)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
			http.Error(w, "cross-origin request refused", http.StatusForbidden)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin accepts a request whose Origin (when sent) is this host.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

// listPage is the data of the list.
type listPage struct {
	Rows      []row
	Filter    filter
	Query     string
	Webhooks  []string
	Decisions []string
	After     uint64
	Keep      int
	Kept      int
	// PageRows is how many rows one page shows (the live page too, as new
	// rows push old ones off it).
	PageRows int
	// Before is the query's before: a page of older reviews, not live.
	Before uint64
	// Older is the id the next page of older reviews starts before; 0
	// when there are none.
	Older uint64
	// OlderURL and NewestURL link the pages, filters kept.
	OlderURL, NewestURL string
	// Shadow: the reviews are compared with the deployed webhook's (start
	// --shadow), in a column of their own.
	Shadow bool
	// Policy: start --policy evaluates the reviews, in a column of their
	// own.
	Policy bool
	// Fault is the session's fault and the form that switches it; nil
	// without your webhooks.
	Fault *faultForm
}

// pageRows is how many reviews a page of the list shows. Laying out a
// table costs the browser in proportion to its rows, on every live
// update: 500 rows took 15 to 50 ms each time on the 2-core machine of
// bench/JOURNAL.md, 100 rows a few.
const pageRows = 100

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	f := filterOf(r.URL.Query())
	all, cursor := s.opts.Store.since(0)
	p := listPage{Filter: f, Query: f.query(), Decisions: decisions, Keep: s.opts.Store.Keep(), PageRows: pageRows,
		After: cursor, Shadow: s.opts.Store.shadowColumn(), Policy: s.opts.Store.policyCol.Load(), Fault: s.faultForm()}
	p.Before, _ = strconv.ParseUint(r.URL.Query().Get("before"), 10, 64)
	for name := range s.opts.Sources {
		p.Webhooks = append(p.Webhooks, name)
	}
	for i := len(all) - 1; i >= 0; i-- {
		e := all[i]
		if !slices.Contains(p.Webhooks, e.webhook) {
			p.Webhooks = append(p.Webhooks, e.webhook)
		}
		if p.Before != 0 && e.id >= p.Before || !f.match(e) {
			continue
		}
		if len(p.Rows) == pageRows {
			p.Older = p.Rows[len(p.Rows)-1].ID
			continue
		}
		p.Rows = append(p.Rows, rowOf(e, s.source(e)))
	}
	slices.Sort(p.Webhooks)
	p.NewestURL = "/"
	if p.Query != "" {
		p.NewestURL += "?" + p.Query
	}
	p.OlderURL = "/?before=" + strconv.FormatUint(p.Older, 10)
	if p.Query != "" {
		p.OlderURL += "&" + p.Query
	}
	p.Kept, _ = s.opts.Store.usage()
	s.render(w, "list", p)
}

// stream sends each review added or changed that passes the filter as a
// server-sent event whose data is the row's HTML, from the seq after
// (query) or Last-Event-ID (a reconnecting browser) on: a "review" event
// for a review the page has not seen, an "update" for one it may show (a
// comparison with the deployed webhook that came in).
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	after, _ := strconv.ParseUint(r.URL.Query().Get("after"), 10, 64)
	if id, err := strconv.ParseUint(r.Header.Get("Last-Event-ID"), 10, 64); err == nil {
		after = id
	}
	f := filterOf(r.URL.Query())
	wake, stop := s.opts.Store.subscribe()
	defer stop()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 1000\n\n")
	flusher.Flush()
	tick := time.NewTicker(streamKeepAlive)
	defer tick.Stop()
	var buf bytes.Buffer
	// Entries up to newest were on the page or sent already: a change to
	// one is an update.
	newest := after
	for {
		batch, next := s.opts.Store.changes(after)
		for _, c := range batch {
			e := c.e
			if !f.match(e) {
				continue
			}
			event := "review"
			if e.id <= newest {
				event = "update"
			}
			newest = max(newest, e.id)
			buf.Reset()
			if err := s.tmpl.ExecuteTemplate(&buf, "row", rowOf(e, s.source(e))); err != nil {
				s.log.Warn("inspector cannot render a row", "error", err)
				continue
			}
			writeEvent(w, c.seq, event, buf.String())
		}
		after = next
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-wake:
			// Let the reviews that follow closely join this one: one
			// write and one flush for a burst, not one per review.
			select {
			case <-r.Context().Done():
				return
			case <-time.After(streamCoalesce):
			}
		case <-tick.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		}
	}
}

// writeEvent writes one server-sent event; data may span lines.
func writeEvent(w http.ResponseWriter, id uint64, event, data string) {
	fmt.Fprintf(w, "id: %d\nevent: %s\n", id, event)
	for _, line := range strings.Split(strings.TrimRight(data, "\n"), "\n") {
		fmt.Fprintf(w, "data: %s\n", line)
	}
	fmt.Fprint(w, "\n")
}

// entryOf finds the review named in the path, or answers 404.
func (s *Server) entryOf(w http.ResponseWriter, r *http.Request) *entry {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	var e *entry
	if err == nil {
		e = s.opts.Store.get(id)
	}
	if e == nil {
		s.renderStatus(w, http.StatusNotFound, "gone", r.PathValue("id"))
	}
	return e
}

func (s *Server) detail(w http.ResponseWriter, r *http.Request) {
	e := s.entryOf(w, r)
	if e == nil {
		return
	}
	d := detailOf(e, s.source(e))
	d.Filter = filterOf(r.URL.Query()).query()
	d.CanReplay = s.opts.Replay != nil && d.kept
	s.render(w, "detail", d)
}

// recordEntry is the review as `hookback replay` reads it; false when its
// body is not kept.
func recordEntry(e *entry) (record.Entry, bool) {
	review, answer := e.bodies()
	return record.Entry{Webhook: e.webhook, Path: e.path, ConfigurationKind: e.kind, Review: review, Answer: answer, Chain: e.chainView(), Policy: e.policyJSON()}, review != nil
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	e := s.entryOf(w, r)
	if e == nil {
		return
	}
	rec, kept := recordEntry(e)
	if !kept {
		http.Error(w, "the inspector kept no body of this review", http.StatusGone)
		return
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		http.Error(w, "encode the review: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="review-%d-%s.json"`, e.id, safeName(e.webhook)))
	_, _ = w.Write(append(b, '\n'))
}

// downloadCase serves the review as a `hookback test` case expecting the
// answer it got (suite.CaseFromEntry, as test init writes it).
func (s *Server) downloadCase(w http.ResponseWriter, r *http.Request) {
	e := s.entryOf(w, r)
	if e == nil {
		return
	}
	rec, kept := recordEntry(e)
	if !kept {
		http.Error(w, "the inspector kept no body of this review", http.StatusGone)
		return
	}
	cf, err := suite.CaseFromEntry(rec)
	if err != nil {
		http.Error(w, "this review makes no test case: "+err.Error(), http.StatusConflict)
		return
	}
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename=%q`, cf.Name))
	_, _ = w.Write(cf.Body)
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, s)
}

// replayResult is what a replay shows.
type replayResult struct {
	ID        uint64
	Unchanged bool
	Diffs     []string
	Answer    string
	Error     string
}

// replay re-sends the review to the same built-in or upstream and compares
// the answers. A request with the header X-Hookback-Fragment gets the
// result alone, for the page's script; others get a page.
func (s *Server) replay(w http.ResponseWriter, r *http.Request) {
	e := s.entryOf(w, r)
	if e == nil {
		return
	}
	res := replayResult{ID: e.id}
	rec, kept := recordEntry(e)
	switch {
	case s.opts.Replay == nil:
		res.Error = "replay is not available in this session"
	case !kept:
		res.Error = "the inspector kept no body of this review"
	default:
		ctx, cancel := context.WithTimeout(r.Context(), replayTimeout)
		answer, diffs, err := record.ReplayOne(ctx, rec, s.opts.Replay)
		cancel()
		if err != nil {
			res.Error = err.Error()
		} else {
			res.Unchanged, res.Diffs, res.Answer = len(diffs) == 0, diffs, pretty(answer)
		}
	}
	s.log.Info("inspector replayed a review", "webhook", e.webhook, "id", e.id, "unchanged", res.Unchanged, "error", res.Error)
	name := "replay-page"
	if r.Header.Get("X-Hookback-Fragment") != "" {
		name = "replay"
	}
	s.render(w, name, res)
}

// render executes a template into a buffer first, so a failure is a clean
// 500 rather than half a page.
func (s *Server) render(w http.ResponseWriter, name string, data any) {
	s.renderStatus(w, http.StatusOK, name, data)
}

func (s *Server) renderStatus(w http.ResponseWriter, code int, name string, data any) {
	var buf bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		s.log.Error("inspector cannot render a page", "page", name, "error", err)
		http.Error(w, "render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}
