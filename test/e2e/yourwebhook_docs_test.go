package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/internal/syncbuf"
)

const yourWebhookDoc = "docs/your-webhook.md"

// docBlock is one fenced block of a Markdown file: its language, the
// heading it is under, its text and, for sh and console blocks, its
// commands (continuation lines joined) with the output shown after each.
type docBlock struct {
	lang, heading, text string
	cmds                []example
}

// docBlocks returns the fenced blocks of file.
func docBlocks(t *testing.T, file string) []docBlock {
	t.Helper()
	b, err := os.ReadFile(repoPath(file))
	if err != nil {
		t.Fatal(err)
	}
	var out []docBlock
	var cur *docBlock
	heading := ""
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &docBlock{lang: strings.TrimPrefix(line, "```"), heading: heading}
		case cur != nil && line == "```":
			cur.cmds = blockCommands(cur.lang, cur.text)
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		case strings.HasPrefix(line, "#"):
			heading = line
		}
	}
	return out
}

// blockCommands splits an sh block into its command lines (comments
// dropped) and a console block into its `$ ` commands and their output.
func blockCommands(lang, text string) []example {
	var out []example
	cont := false
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		switch {
		case cont:
			out[len(out)-1].cmd += "\n" + line
		case lang == "sh" && line != "" && !strings.HasPrefix(line, "#"):
			out = append(out, example{cmd: line})
		case lang == "console" && strings.HasPrefix(line, "$ "):
			out = append(out, example{cmd: strings.TrimPrefix(line, "$ ")})
		case lang == "console" && len(out) > 0:
			out[len(out)-1].out += line + "\n"
		}
		cont = strings.HasSuffix(line, "\\")
	}
	return out
}

// docRun runs the blocks of docs/your-webhook.md and records which ran,
// so that a block no step runs fails the test.
type docRun struct {
	t      *testing.T
	blocks []docBlock
	ran    []bool
	// ports maps a port the doc names to the free one the test uses: the
	// only edit made to what the doc says.
	ports *strings.Replacer
}

// block returns the n-th block of lang under heading, marked as run.
func (d *docRun) block(heading, lang string, n int) docBlock {
	d.t.Helper()
	for i, b := range d.blocks {
		if b.heading != heading || b.lang != lang {
			continue
		}
		if n--; n < 0 {
			d.ran[i] = true
			b.text = d.ports.Replace(b.text)
			for j := range b.cmds {
				b.cmds[j].cmd = d.ports.Replace(b.cmds[j].cmd)
				b.cmds[j].out = d.ports.Replace(b.cmds[j].out)
			}
			return b
		}
	}
	d.t.Fatalf("%s: no %s block %d under %q", yourWebhookDoc, lang, n, heading)
	return docBlock{}
}

// file writes, in dir, the block whose first line is a comment naming the
// file (# webhook.py), as a reader saves it.
func (d *docRun) file(heading, lang, dir string) {
	d.t.Helper()
	b := d.block(heading, lang, 0)
	first, _, _ := strings.Cut(b.text, "\n")
	name, ok := strings.CutPrefix(first, "# ")
	if !ok || strings.ContainsAny(name, " /") {
		d.t.Fatalf("%s: the %s block under %q does not start with `# FILENAME`: %q", yourWebhookDoc, lang, heading, first)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(b.text), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// served is a long-running command of the doc (hookback start, make run, a
// webhook server), in its own process group so that make's child stops too.
type served struct {
	line     string
	cmd      *exec.Cmd
	out, err syncbuf.Buffer
	done     chan error
	exited   bool // done was received from
}

// serve starts line in s and waits until it is ready: hookback's ready
// banner, or a listener on port for anything else.
func serve(t *testing.T, s *shellEnv, line string, port int) *served {
	t.Helper()
	p := &served{line: line, cmd: s.shell(context.Background(), line), done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { p.stop(t, false) })
	eventually(t, "ready: "+line, func(context.Context) (bool, error) {
		select {
		case err := <-p.done:
			p.exited = true
			t.Fatalf("%s exited before ready: %v\nstdout:\n%s\nstderr:\n%s", line, err, p.out.String(), p.err.String())
		default:
		}
		if strings.Contains(line, "hookback start") {
			return strings.Contains(p.out.String(), "hookback is ready"), nil
		}
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			return false, nil
		}
		c.Close()
		return true, nil
	})
	return p
}

// stop sends SIGTERM to the process group, as Ctrl-C would, and waits;
// with clean, hookback must have deregistered (sh, killed by the signal
// too, has no exit status to tell).
func (p *served) stop(t *testing.T, clean bool) {
	t.Helper()
	if p.exited {
		return
	}
	p.exited = true
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		if clean && !strings.Contains(p.err.String(), "msg=deregistered") {
			t.Errorf("%s did not deregister on SIGTERM\nstdout:\n%s\nstderr:\n%s", p.line, p.out.String(), p.err.String())
		}
	case <-time.After(deadline):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		t.Errorf("%s did not stop on SIGTERM", p.line)
	}
}

// sh runs line in s and returns its combined output and error.
func sh(s *shellEnv, line string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	out, err := s.shell(ctx, line).CombinedOutput()
	return string(out), err
}

// TestYourWebhookDocRuns runs every command of docs/your-webhook.md as
// written, in the directory it is meant for: the two commands of a
// kubebuilder project and of an Operator SDK one, the Python server of the
// any-language walkthrough with each --webhook-config form, render, check,
// --timeout, --record-dir and replay, the --upstream mappings. Ports 8080 and 9443 become free ports;
// hookback's own ports come from HOOKBACK_* variables. A block of the doc
// that no step runs fails the test.
func TestYourWebhookDocRuns(t *testing.T) {
	requireLocal(t, "installs the CRD of testdata/project and a webhook on every ConfigMap of the cluster")
	blocks := docBlocks(t, yourWebhookDoc)
	pyPort, mgrPort := freePort(t), freePort(t)
	d := &docRun{t: t, blocks: blocks, ran: make([]bool, len(blocks)), ports: strings.NewReplacer(
		"8080", strconv.Itoa(pyPort), "9443", strconv.Itoa(mgrPort))}

	t.Run("kubebuilder", func(t *testing.T) { docProject(t, d, mgrPort, "", "e2eproj (example.com)") })
	t.Run("operator-sdk", func(t *testing.T) {
		docProject(t, d, mgrPort, repoPath("testdata", "operator-sdk", "PROJECT"), "memcached-operator (example.com)")
	})
	t.Run("any-language", func(t *testing.T) { docAnyLanguage(t, d, pyPort) })
	for i, b := range blocks {
		if !d.ran[i] && b.lang != "text" {
			t.Errorf("%s: the %s block under %q is run by no step of this test:\n%s", yourWebhookDoc, b.lang, b.heading, b.text)
		}
	}
}

// docProject runs the two commands in a kubebuilder-shaped project whose
// manager is controller-runtime's webhook server (PROJECT copied from
// projectFile when set), and sees the manager's denial.
func docProject(t *testing.T, d *docRun, mgrPort int, projectFile, title string) {
	const heading = "## A kubebuilder project: two commands"
	ns, session := namespace(t), sessionFor(t)
	s := newShellEnv(t)
	kubebuilderProject(t, s.dir, session, mgrPort)
	if projectFile != "" {
		copyFile(t, projectFile, filepath.Join(s.dir, "PROJECT"))
	}
	// Both processes see this TMPDIR, so the cert dir is the test's own.
	s.environ = append(s.environ, "HOOKBACK_SESSION="+session, "TMPDIR="+t.TempDir(),
		"HOOKBACK_INSPECTOR_ADDRESS=127.0.0.1:"+strconv.Itoa(freePort(t)))
	// check first, on project mode's own upstream (9443): a manager not
	// listening yet is a line, not a failure. An --upstream the user set
	// (HOOKBACK_UPSTREAM below) must listen, so check runs before it.
	check := d.block(heading, "sh", 2).cmds[0].cmd
	if out, err := sh(s, check); err != nil || !strings.Contains(out, "project "+title) || !strings.Contains(out, "Upstream:  https://127.0.0.1:9443") {
		t.Errorf("%s: %v, want it to check project %s and its upstream 9443:\n%s", check, err, title, out)
	}
	// rbac in the same project: the roles for its webhooks, none of the
	// built-ins' (pods/exec is exec-rbac's).
	rbac := d.block(heading, "sh", 2).cmds[1].cmd
	if out, err := sh(s, rbac); err != nil || !strings.Contains(out, "validatingwebhookconfigurations") || strings.Contains(out, "pods/exec") {
		t.Errorf("%s: %v, want the project's roles without the built-ins':\n%s", rbac, err, out)
	}
	// start on the manager's port, 9443's stand-in.
	s.environ = append(s.environ, "HOOKBACK_UPSTREAM=https://127.0.0.1:"+strconv.Itoa(mgrPort))
	start := serve(t, s, d.block(heading, "sh", 0).cmds[0].cmd, 0)
	for _, want := range []string{"project:  " + title, "make run"} {
		if !strings.Contains(start.out.String(), want) {
			t.Errorf("the banner lacks %q:\n%s", want, start.out.String())
		}
	}
	mgr := serve(t, s, d.block(heading, "sh", 1).cmds[0].cmd, mgrPort)
	_, err := upstreamPod(context.Background(), ns, "deny-doc", session, nil)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "controller-runtime says no to deny-doc") {
		t.Errorf("deny-doc: err = %v, want controller-runtime's denial", err)
	}
	mgr.stop(t, false)
	start.stop(t, true)
}

// docAnyLanguage runs the any-language walkthrough: webhook.py and
// webhook.yaml saved from the doc, then every hookback command that calls it.
func docAnyLanguage(t *testing.T, d *docRun, pyPort int) {
	const anyLang = "## Any project, any language: `--webhook-config`"
	s := newShellEnv(t)
	s.environ = append(s.environ, "HOOKBACK_INSPECTOR_ADDRESS=127.0.0.1:"+strconv.Itoa(freePort(t)))
	d.file(anyLang, "python", s.dir)
	d.file(anyLang, "yaml", s.dir)
	cms := env.client.CoreV1().ConfigMaps("default")
	t.Cleanup(func() { _ = cms.Delete(context.Background(), "allow-me", metav1.DeleteOptions{}) })
	_ = cms.Delete(context.Background(), "allow-me", metav1.DeleteOptions{})
	serve(t, s, d.block(anyLang, "sh", 0).cmds[0].cmd, pyPort)

	start := serve(t, s, d.block(anyLang, "sh", 1).cmds[0].cmd, 0)
	for _, ex := range d.block(anyLang, "console", 0).cmds {
		out, err := sh(s, ex.cmd)
		denial := strings.Contains(ex.out, "denied the request")
		if (err != nil) != denial || !strings.Contains(out, strings.TrimSpace(ex.out)) {
			t.Errorf("%s: %v\ngot:\n%s\nwant:\n%s", ex.cmd, err, out, ex.out)
		}
	}
	start.stop(t, true)

	// render prints the rewritten webhook; check says webhook.py listens.
	for _, ex := range d.block(anyLang, "sh", 3).cmds {
		want := "demo.example.com"
		if strings.HasPrefix(ex.cmd, "hookback check") {
			want = "accepts connections"
		}
		if out, err := sh(s, ex.cmd); err != nil || !strings.Contains(out, want) {
			t.Errorf("%s: %v, want %q in:\n%s", ex.cmd, err, want, out)
		}
	}
	debug := serve(t, s, d.block("## Stepping through a handler in a debugger", "sh", 0).cmds[0].cmd, 0)
	docDenied(t, s, "deny-debug")
	debug.stop(t, true)

	rec := d.block("## Record and replay", "sh", 0).cmds
	recording := serve(t, s, rec[0].cmd, 0)
	docDenied(t, s, "deny-recorded")
	recording.stop(t, true)
	// The review is written after the answer has left: wait for it.
	eventually(t, "a review in ./reviews", func(context.Context) (bool, error) {
		files, err := filepath.Glob(filepath.Join(s.dir, "reviews", "*.json"))
		return len(files) > 0, err
	})
	if out, err := sh(s, rec[1].cmd); err != nil || !strings.Contains(out, "answers as recorded") {
		t.Errorf("%s: %v, want all answers as recorded:\n%s", rec[1].cmd, err, out)
	}

	docForms(t, d, pyPort)
}

// docDenied creates a ConfigMap with kubectl and wants webhook.py's denial.
func docDenied(t *testing.T, s *shellEnv, name string) {
	t.Helper()
	out, err := sh(s, "kubectl create configmap "+name)
	if err == nil || !strings.Contains(out, name+": names starting with deny- are refused") {
		t.Errorf("kubectl create configmap %s: %v, want webhook.py's denial:\n%s", name, err, out)
	}
}

// docForms runs each --webhook-config form in a copy of testdata/project
// (a kubebuilder project with dist/install.yaml), webhook.py still the
// upstream: a CronJob named deny-* is refused by it through each.
func docForms(t *testing.T, d *docRun, pyPort int) {
	const anyLang = "## Any project, any language: `--webhook-config`"
	s := newShellEnv(t)
	// The mapping example is in project mode, which writes a serving
	// certificate into $TMPDIR: the test's own, never the machine's.
	s.environ = append(s.environ, "HOOKBACK_INSPECTOR_ADDRESS=127.0.0.1:"+strconv.Itoa(freePort(t)), "TMPDIR="+t.TempDir())
	if err := os.CopyFS(filepath.Join(s.dir, "p"), os.DirFS(repoPath("testdata", "project"))); err != nil {
		t.Fatal(err)
	}
	s.dir = filepath.Join(s.dir, "p")
	ns := namespace(t)
	for i, ex := range d.block(anyLang, "sh", 2).cmds {
		p := serve(t, s, ex.cmd, 0)
		name := "deny-form-" + strconv.Itoa(i)
		cronJob := fmt.Sprintf("apiVersion: batch.tutorial.kubebuilder.io/v1\nkind: CronJob\nmetadata: {name: %s, namespace: %s}\nspec: {schedule: '*/1 * * * *'}\n", name, ns)
		if err := os.WriteFile(filepath.Join(s.dir, name+".yaml"), []byte(cronJob), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := sh(s, "kubectl create -f "+name+".yaml")
		if err == nil || !strings.Contains(out, name+": names starting with deny- are refused") {
			t.Errorf("%s: a CronJob %s: %v, want webhook.py's denial:\n%s\nhookback:\n%s", ex.cmd, name, err, out, p.err.String())
		}
		p.stop(t, true)
	}
	docMapping(t, d, s)
}

// docMapping runs the --upstream NAMESPACE/SERVICE=URL examples in
// testdata/project: a mapping by rendered name starts, one by the name as
// written is refused with the names to use.
func docMapping(t *testing.T, d *docRun, s *shellEnv) {
	const heading = "### Several servers: `--upstream NAMESPACE/SERVICE=URL`"
	p := serve(t, s, d.block(heading, "sh", 0).cmds[0].cmd, 0)
	for _, want := range []string{"upstream: project-system/project-webhook-service -> https://", "upstream: project-system/webhook-service -> http://"} {
		if !strings.Contains(p.out.String(), want) {
			t.Errorf("the banner lacks %q:\n%s", want, p.out.String())
		}
	}
	p.stop(t, true)
	for _, ex := range d.block(heading, "console", 0).cmds {
		out, err := sh(s, ex.cmd)
		if err == nil || !strings.Contains(out, strings.TrimSpace(ex.out)) {
			t.Errorf("%s: %v, want the error the doc shows\ngot:\n%s\nwant:\n%s", ex.cmd, err, out, ex.out)
		}
	}
}
