package chain

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookback/hookback/record"
)

// Published is one request's view for the inspector and the record
// directory, explained the first time it is asked for (View), so that a
// chain nobody looks at costs its observations and nothing more: an open
// inspector page or --record-dir asks, a session nobody watches does not.
type Published struct {
	// Webhook, Path and UID are your webhook's first call of the request:
	// the inspector's entry of that review gets the view.
	Webhook, Path, UID string
	view               func() explained
}

// explained is a view made: the view, its JSON, or why there is none.
type explained struct {
	view View
	json []byte
	err  error
}

// NewPublished is a view already made, for a sink's tests and replays.
func NewPublished(webhook, path, uid string, v View) Published {
	b, err := json.Marshal(v)
	return Published{Webhook: webhook, Path: path, UID: uid, view: func() explained { return explained{v, b, err} }}
}

// View explains the request's chain on the first call, from any sink,
// and returns the same view and JSON to every call.
func (p Published) View() (View, []byte, error) {
	e := p.view()
	return e.view, e.json, e.err
}

// Publisher explains the chains the Joiner is done with, off the
// admission path, and hands each view to its sinks.
type Publisher struct {
	// Catalog is the cluster's configurations and policies now.
	Catalog func() Catalog
	// NamespaceLabels are a namespace's labels, nil when unknown.
	NamespaceLabels func(ns string) map[string]string
	// Audit finds the apiserver's audit record of a chain whose your
	// webhook's configuration is named; nil, or a nil result, when it has
	// none.
	Audit func(c *Chain, yourConf string) *Record
	Sinks []func(Published)
	Log   *slog.Logger

	queue   chan *Chain
	dropped *atomic.Int64
	// yours is what the session registered (SetRegistered).
	yours *atomic.Pointer[Registered]
}

// NewPublisher returns a publisher with room for pending chains.
func NewPublisher(p Publisher) *Publisher {
	p.queue, p.dropped, p.yours = make(chan *Chain, 256), new(atomic.Int64), new(atomic.Pointer[Registered])
	if p.Log == nil {
		p.Log = slog.New(slog.DiscardHandler)
	}
	return &p
}

// SetRegistered says what the session registers for your webhooks, each
// time it applies its configurations: the views take only those for
// yours.
func (p *Publisher) SetRegistered(r Registered) { p.yours.Store(&r) }

// Done is the Joiner's Done: it never blocks; a chain that finds the queue
// full is dropped and counted.
func (p *Publisher) Done(c *Chain) {
	select {
	case p.queue <- c:
	default:
		p.dropped.Add(1)
	}
}

// Run explains and publishes until ctx ends, expiring j's old chains
// every second.
func (p *Publisher) Run(ctx context.Context, j *Joiner) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			j.Expire()
		case c := <-p.queue:
			p.publish(c)
		}
	}
}

// publish hands c's view to the sinks, to be explained when one asks.
func (p *Publisher) publish(c *Chain) {
	y := c.Yours[0]
	view := sync.OnceValue(func() explained { return p.explain(c) })
	for _, s := range p.Sinks {
		s(Published{Webhook: y.Webhook, Path: y.Path, UID: y.UID, view: view})
	}
}

// explain makes c's view against the cluster's configurations and
// policies as they are now, and logs its warnings.
func (p *Publisher) explain(c *Chain) explained {
	var cat Catalog
	if p.Catalog != nil {
		cat = p.Catalog()
	}
	var ns map[string]string
	if p.NamespaceLabels != nil && c.Identity.Namespace != "" {
		ns = p.NamespaceLabels(c.Identity.Namespace)
	}
	var yours Registered
	if r := p.yours.Load(); r != nil {
		yours = *r
	}
	var rec *Record
	if p.Audit != nil {
		if conf, _ := yourConfiguration(cat, yours, c.Yours[0].Path); conf != "" {
			rec = p.Audit(c, conf)
		}
	}
	v, err := Explain(c, cat, yours, ns, rec)
	if err != nil {
		p.Log.Warn("chain view not made", "request", c.Identity.String(), "error", err)
		return explained{err: err}
	}
	b, err := json.Marshal(v)
	if err != nil {
		p.Log.Warn("chain view not encoded", "request", c.Identity.String(), "error", err)
		return explained{err: err}
	}
	for _, w := range v.Warnings {
		p.Log.Warn("admission chain: "+w.Message, "request", c.Identity.String(), "warning", w.Kind)
	}
	return explained{view: v, json: b}
}

// Dropped is how many chains found the queue full.
func (p *Publisher) Dropped() int64 { return p.dropped.Load() }

// DirSink writes each view to dir/chain/, one file per request named as
// --record-dir names your webhook's review (record.FileName), mode 0600,
// each whole before it is seen (record.WriteWhole). The subdirectory
// keeps the views out of `hookback replay`'s reading of dir.
func DirSink(dir string, log *slog.Logger) (func(Published), error) {
	sub := filepath.Join(dir, "chain")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		return nil, fmt.Errorf("chain: create %s: %w", sub, err)
	}
	var seq atomic.Uint64
	return func(x Published) {
		v, b, err := x.View()
		if err != nil {
			return // said by the publisher
		}
		id := v.Request
		name := record.FileName(seq.Add(1), x.Webhook, id.Operation, id.Namespace, id.Name, x.UID)
		doc, err := json.MarshalIndent(struct {
			Webhook string          `json:"webhook"`
			Path    string          `json:"path"`
			UID     string          `json:"uid"`
			Chain   json.RawMessage `json:"chain"`
		}{x.Webhook, x.Path, x.UID, b}, "", "  ")
		if err == nil {
			err = record.WriteWhole(filepath.Join(sub, name), append(doc, '\n'))
		}
		if err != nil && log != nil {
			log.Warn("chain view not recorded", "webhook", x.Webhook, "error", err)
		}
	}, nil
}
