package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/record"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/upstream"
)

var replayExamples = []Example{
	{Command: "hookback replay --webhook pod-name review.json"},
	{Command: "hookback replay --webhook pod-lifespan - < review.json", Comment: "- reads the review from stdin"},
}

// Exit codes of replay --upstream.
const exitChanged = 1

// ReplayOptions are replay's flags.
type ReplayOptions struct {
	GlobalOptions
	Webhook string
	Options webhooks.Options
	// Upstream, UpstreamCA and UpstreamInsecure say where recorded reviews go.
	Serve ServeOptions
}

func (o *ReplayOptions) bind(b *binder) {
	o.GlobalOptions.bind(b)
	bind(b, &o.Webhook, "webhook", catBuiltins, "built-in webhook to run ("+strings.Join(webhooks.Names(), ", ")+")")
	bindWebhookOptions(b, &o.Options)
	o.Serve.bindUpstream(b)
}

func replayCommand() (*cli.Command, *binder) {
	o, b := ReplayOptions{GlobalOptions: defaultGlobalOptions(), Options: webhooks.DefaultOptions()}, &binder{}
	o.bind(b)
	cmd := &cli.Command{
		Name:      "replay",
		Usage:     "run a review through a built-in webhook, or recorded reviews through your webhook server again",
		ArgsUsage: "FILE (with --webhook: an AdmissionReview, v1 or v1beta1; - for stdin) | FILE|DIR... (with --upstream: start --record-dir files)",
		Description: `With --webhook, replay feeds a saved AdmissionReview through the same transport and
handler that start serves, without a cluster, and prints the AdmissionReview it would
answer, the decoded JSON patch, and the Events the webhook would record.

With --upstream, replay sends reviews recorded by start --record-dir to your webhook
server again, through the same checks start applies, and compares each answer with
the recorded one (allowed, message, patch): exit 0 when all match, 1 when any
differs, 2 on error. A regression check after a change to your webhook.` + examplesText(replayExamples),
		Flags: b.flags,
		Action: func(c *cli.Context) error {
			b.load(c)
			return runReplay(c, o)
		},
	}
	return cmd, b
}

func runReplay(c *cli.Context, o ReplayOptions) error {
	if len(o.Serve.Plan.User.Upstream) > 0 {
		return replayUpstream(c, o)
	}
	if o.Webhook == "" {
		return usage(fmt.Errorf("replay needs --webhook NAME (a built-in, offline) or --upstream URL (recorded reviews, to your server)"))
	}
	if c.NArg() != 1 {
		return usage(fmt.Errorf("replay takes one FILE (or - for stdin), got %d arguments", c.NArg()))
	}
	g, opts := o.GlobalOptions, o.Options
	if err := errors.Join(g.Validate(), assembly.ValidateWebhookOptions(opts)); err != nil {
		return usage(err)
	}
	body, err := readInput(c.Args().First())
	if err != nil {
		return err
	}
	log := g.logger(c.App.ErrWriter)
	recorded := make(chan string, 16)
	hooks, err := webhooks.Build([]string{o.Webhook}, opts, webhooks.Deps{
		Log:      log,
		Recorder: func(string) events.EventRecorder { return &events.FakeRecorder{Events: recorded} },
		Pods:     corev1listers.NewPodLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
	})
	if err != nil {
		return err
	}
	h := admissionhttp.NewHandler(hooks[0], admissionhttp.Options{Log: log})
	req := httptest.NewRequest(http.MethodPost, hooks[0].Path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return fmt.Errorf("the webhook refused the review (HTTP %d): %s", rec.Code, bytes.TrimSpace(rec.Body.Bytes()))
	}
	return printReply(c.App.Writer, rec.Body.Bytes(), recorded)
}

func readInput(name string) ([]byte, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("open review: %w", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, admissionhttp.DefaultMaxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read review: %w", err)
	}
	return b, nil
}

// printReply prints the review, the patch decoded from base64, and events.
func printReply(w io.Writer, reply []byte, recorded chan string) error {
	var review struct {
		Response struct {
			Patch []byte `json:"patch"`
		} `json:"response"`
	}
	if err := json.Unmarshal(reply, &review); err != nil {
		return fmt.Errorf("decode reply: %w", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, reply, "", "  "); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s\n", out.Bytes())
	if len(review.Response.Patch) > 0 {
		out.Reset()
		if err := json.Indent(&out, review.Response.Patch, "", "  "); err != nil {
			return err
		}
		fmt.Fprintf(w, "patch:\n%s\n", out.Bytes())
	}
	close(recorded)
	for e := range recorded {
		fmt.Fprintf(w, "event: %s\n", e)
	}
	return nil
}

// replayUpstream re-sends recorded reviews to the upstream and reports what
// changed.
func replayUpstream(c *cli.Context, o ReplayOptions) error {
	g := o.GlobalOptions
	spec, err := o.Serve.Plan.User.ParseUpstreams()
	if err == nil && len(spec.Upstreams) != 1 {
		err = errors.New("replay takes one --upstream URL")
	}
	if err == nil && c.NArg() == 0 {
		err = errors.New("replay --upstream takes the recorded files or directories to replay")
	}
	if err := errors.Join(err, g.Validate()); err != nil {
		return usage(err)
	}
	entries, err := record.ReadEntries(c.Args().Slice())
	if err != nil {
		return usage(err)
	}
	log := g.logger(c.App.ErrWriter)
	base, _ := url.Parse(spec.Upstreams[0].URL)
	opts := upstream.Options{Base: base, CAFile: spec.UpstreamCA, Insecure: spec.UpstreamInsecure, Log: log}
	target := func(e record.Entry) (http.Handler, error) {
		if crd, path, ok := registration.ConversionOf(e.Path); ok {
			return conversionTarget(opts, crd, e.Path, path, log)
		}
		fwd, err := upstream.New(opts, registration.UpstreamPathOf(e.Path))
		if err != nil {
			return nil, err
		}
		return admissionhttp.NewHandler(admission.Webhook{Name: e.Webhook, Path: e.Path, Handler: fwd}, admissionhttp.Options{Log: log}), nil
	}
	changed, err := record.Replay(c.Context, entries, target, c.App.Writer)
	switch {
	case err != nil:
		return exit(err, exitUsage)
	case changed > 0:
		return cli.Exit(fmt.Sprintf("%d of %d answers changed", changed, len(entries)), exitChanged)
	}
	fmt.Fprintf(c.App.Writer, "all %d answers as recorded\n", len(entries))
	return nil
}
