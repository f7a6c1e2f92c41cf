package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// page is one headless Chromium tab, kept on about:blank between the page
// phases so that the browser's start is never timed.
type page struct {
	ctx    context.Context
	cancel func()
	url    string
}

func newPage(ctx context.Context, chromium, url string) (*page, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1400, 1000),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"),
		chromedp.Flag("no-proxy-server", true), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancel := chromedp.NewContext(actx)
	p := &page{ctx: bctx, cancel: func() { cancel(); cancelAlloc() }, url: url}
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		p.cancel()
		return nil, fmt.Errorf("start chromium %s: %w", chromium, err)
	}
	return p, nil
}

func (p *page) close() { p.cancel() }

// probe watches the live list from inside the page: when each row arrives
// (by its pod's sequence number), how late a 50 ms timer fires (the wait a
// click or a key would see), and the main thread's long tasks.
const probe = `(() => {
  const m = window.benchProbe = {rows: {}, timerLate: [], longTasks: []};
  new MutationObserver(recs => {
    const now = Date.now();
    for (const r of recs) for (const n of r.addedNodes) {
      const c = n.querySelector && n.querySelector('td.name');
      const seq = c && /bench-(\d+)$/.exec(c.textContent);
      if (seq) m.rows[seq[1]] = now;
    }
  }).observe(document.getElementById('rows'), {childList: true});
  let due = performance.now() + 50;
  setInterval(() => { const t = performance.now(); m.timerLate.push(Math.max(0, t - due)); due = t + 50; }, 50);
  try { new PerformanceObserver(l => { for (const e of l.getEntries()) m.longTasks.push(e.duration); }).observe({type: 'longtask'}); } catch (e) {}
  return true;
})()`

func (p *page) open(ctx context.Context) error {
	err := chromedp.Do(p.ctx, chromedp.Navigate(p.url),
		chromedp.Poll[chromedp.Void](`document.getElementById('live').textContent === 'live'`, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Evaluate[chromedp.Void](probe))
	if err != nil {
		return fmt.Errorf("open the inspector page: %w", err)
	}
	return nil
}

func (p *page) blank(ctx context.Context) { _ = chromedp.Do(p.ctx, chromedp.Navigate("about:blank")) }

type pageMetrics struct {
	Rows      map[string]int64 `json:"rows"`
	TimerLate []float64        `json:"timerLate"`
	LongTasks []float64        `json:"longTasks"`
	RowCount  int              `json:"rowCount"`
}

func (p *page) collect(ctx context.Context) (*pageMetrics, error) {
	raw, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](
		`JSON.stringify(Object.assign({rowCount: document.querySelectorAll('#rows tr').length}, window.benchProbe))`))
	if err != nil {
		return nil, fmt.Errorf("read the page's probe: %w", err)
	}
	var m pageMetrics
	if err := json.NewDecoder(strings.NewReader(raw)).Decode(&m); err != nil {
		return nil, fmt.Errorf("decode the page's probe: %w", err)
	}
	return &m, nil
}
