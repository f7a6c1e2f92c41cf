package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/urfave/cli/v2"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/webhook"
)

var replayExamples = []Example{
	{Command: "hookback replay --webhook pod-name review.json"},
	{Command: "hookback replay --webhook pod-lifespan - < review.json", Comment: "- reads the review from stdin"},
}

func replayCommand() *cli.Command {
	webhookFlag := newFlag("webhook").(*cli.StringFlag)
	webhookFlag.Required = true
	return &cli.Command{
		Name:      "replay",
		Usage:     "run one AdmissionReview through a built-in webhook, offline, and print the reply",
		ArgsUsage: "FILE (an AdmissionReview in JSON, v1 or v1beta1; - for stdin)",
		Description: `replay feeds a saved AdmissionReview through the same transport and handler that
start serves, without a cluster, and prints the AdmissionReview it would answer, the
decoded JSON patch, and the Events the webhook would record. Handy to debug a review
captured from an apiserver's audit log or a failing request.` + examplesText(replayExamples),
		Flags:  append(withGlobal("banned-words", "sidecar-image", "cpu-oversell-factor"), webhookFlag),
		Action: runReplay,
	}
}

func runReplay(c *cli.Context) error {
	if c.NArg() != 1 {
		return usage(fmt.Errorf("replay takes one FILE (or - for stdin), got %d arguments", c.NArg()))
	}
	g := globalOptions(c)
	opts := webhook.Options{BannedWords: c.StringSlice("banned-words"), SidecarImage: c.String("sidecar-image"),
		CPUOversellFactor: c.Float64("cpu-oversell-factor")}
	if err := errors.Join(g.Validate(), opts.Validate()); err != nil {
		return usage(err)
	}
	body, err := readInput(c.Args().First())
	if err != nil {
		return err
	}
	log := g.logger(c.App.ErrWriter)
	recorded := make(chan string, 16)
	hooks, err := webhook.Build([]string{c.String("webhook")}, opts, webhook.Deps{
		Log:      log,
		Recorder: func(string) events.EventRecorder { return &events.FakeRecorder{Events: recorded} },
		Pods:     corev1listers.NewPodLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
	})
	if err != nil {
		return err
	}
	h := admission.NewHTTPHandler(hooks[0], admission.HTTPOptions{Log: log})
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
	b, err := io.ReadAll(io.LimitReader(r, admission.DefaultMaxBodyBytes+1))
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
