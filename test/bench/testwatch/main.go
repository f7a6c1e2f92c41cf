// Command testwatch measures `hookback test --watch` from a save to its
// result, beside a full `hookback test` of the same suite in the same
// run: 100 cases written by `hookback test init --from-objects` against
// testdata/crdvalidate's Widget CRD, then, with the watch running, a case
// file saved with its expectation flipped (the result line of that case
// changes) and the CRD saved with a comment added (every case rerun with
// the CRD compiled again), each timed from the write to the summary line
// the watch prints after it. Target: under 200 ms for 100 cases. No
// cluster; nothing leaves the machine.
//
// Run from test/bench/: go run ./testwatch -hookback ../../.cache/hookback -cases 100 -saves 20
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	bin := flag.String("hookback", "", "the hookback binary (built with the release's flags)")
	cases := flag.Int("cases", 100, "cases in the suite")
	saves := flag.Int("saves", 20, "saves timed of each kind, and full runs")
	flag.Parse()
	if err := run(*bin, *cases, *saves); err != nil {
		fmt.Fprintln(os.Stderr, "testwatch:", err)
		os.Exit(1)
	}
}

func run(bin string, n, saves int) error {
	if bin == "" {
		return errors.New("-hookback: name the binary")
	}
	dir, err := os.MkdirTemp("", "testwatch")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	crd := filepath.Join(dir, "crd.yaml")
	if err := copyFile(filepath.Join("..", "..", "testdata", "crdvalidate", "widgets-crd.yaml"), crd); err != nil {
		return err
	}
	if err := writeObjects(filepath.Join(dir, "widgets.yaml"), n); err != nil {
		return err
	}
	suite := filepath.Join(dir, "suite")
	if out, err := exec.Command(bin, "test", "init", "--from-objects", filepath.Join(dir, "widgets.yaml"), "--crd", crd, "--out", suite).CombinedOutput(); err != nil {
		return fmt.Errorf("test init: %v\n%s", err, out)
	}
	full := make([]time.Duration, 0, saves)
	for range saves {
		start := time.Now()
		if out, err := exec.Command(bin, "test", "--crd", crd, "--webhooks", "none", suite).CombinedOutput(); err != nil {
			return fmt.Errorf("hookback test: %v\n%s", err, out)
		}
		full = append(full, time.Since(start))
	}
	caseSaves, crdSaves, err := watch(bin, crd, suite, saves)
	if err != nil {
		return err
	}
	fmt.Printf("%d cases (test init --from-objects of %d Widgets), %d of each measurement\n\n", n, n, saves)
	fmt.Println("| what | median | p90 | max |")
	fmt.Println("|---|---|---|---|")
	row("`hookback test` of the suite (process start to exit)", full)
	row("`test --watch`: a case saved, to its result", caseSaves)
	row("`test --watch`: the CRD saved, to every result", crdSaves)
	return nil
}

// watch starts test --watch and times saves of a case and of the CRD.
func watch(bin, crd, suite string, saves int) (caseSaves, crdSaves []time.Duration, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "test", "--watch", "--crd", crd, "--webhooks", "none", suite)
	cmd.Stdout = io.Discard
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	runs := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "watching for changes") {
				runs <- sc.Text()
			}
		}
		close(runs)
	}()
	next := func() error {
		select {
		case _, ok := <-runs:
			if !ok {
				return errors.New("test --watch exited")
			}
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("no run within 10 s of a save")
		}
	}
	if err := next(); err != nil {
		return nil, nil, err
	}
	entries, err := os.ReadDir(suite)
	if err != nil || len(entries) == 0 {
		return nil, nil, fmt.Errorf("the suite: %v", err)
	}
	// The first case expected allowed: its expectation flipped to denied
	// and back changes its row on every save.
	var target string
	var body []byte
	for _, e := range entries {
		target = filepath.Join(suite, e.Name())
		if body, err = os.ReadFile(target); err != nil {
			return nil, nil, err
		}
		if strings.Contains(string(body), "result: allowed") {
			break
		}
	}
	flipped := strings.Replace(string(body), "result: allowed", "result: denied", 1)
	crdBody, err := os.ReadFile(crd)
	if err != nil {
		return nil, nil, err
	}
	for i := range saves {
		content := []byte(flipped)
		if i%2 == 1 {
			content = body
		}
		d, err := timedSave(target, content, next)
		if err != nil {
			return nil, nil, fmt.Errorf("save %d of %s: %w", i, target, err)
		}
		caseSaves = append(caseSaves, d)
		d, err = timedSave(crd, fmt.Appendf(slices.Clone(crdBody), "# save %d\n", i), next)
		if err != nil {
			return nil, nil, fmt.Errorf("save %d of the CRD: %w", i, err)
		}
		crdSaves = append(crdSaves, d)
	}
	return caseSaves, crdSaves, nil
}

// timedSave writes path and waits for the run it causes.
func timedSave(path string, body []byte, next func() error) (time.Duration, error) {
	start := time.Now()
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return 0, err
	}
	if err := next(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// writeObjects writes n Widgets, a quarter of them with inverted
// replicas (denied by a CEL rule), one in ten with an unknown field (a
// warning).
func writeObjects(path string, n int) error {
	var b strings.Builder
	for i := range n {
		minR, maxR := 1, 3
		if i%4 == 0 {
			minR, maxR = 5, 2
		}
		extra := ""
		if i%10 == 0 {
			extra = ", colour: blue"
		}
		fmt.Fprintf(&b, "---\napiVersion: crdvalidate.hookback.dev/v1\nkind: Widget\nmetadata: {name: w%03d}\nspec: {class: gold, minReplicas: %d, maxReplicas: %d%s}\n", i, minR, maxR, extra)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

func row(what string, ds []time.Duration) {
	s := slices.Sorted(slices.Values(ds))
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }
	fmt.Printf("| %s | %s | %s | %s |\n", what, ms(s[len(s)/2]), ms(s[len(s)*9/10]), ms(s[len(s)-1]))
}
