package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookback/hookback/audit"
)

// fakeTerminal is stderr as a test sees it: a buffer that says whether it
// is a terminal.
type fakeTerminal struct {
	bytes.Buffer
	tty bool
}

func (f *fakeTerminal) IsTerminal() bool { return f.tty }

var _ terminalWriter = (*fakeTerminal)(nil)

// screen is the line a terminal shows after out: \r goes back to the
// start of the line, ESC[K erases from the cursor to its end.
func screen(out string) string {
	var line []rune
	col := 0
	for i := 0; i < len(out); {
		switch {
		case out[i] == '\r':
			col = 0
			i++
		case strings.HasPrefix(out[i:], "\033[K"):
			line = line[:col]
			i += 3
		default:
			r := []rune(out[i:])[0]
			if col < len(line) {
				line[col] = r
			} else {
				line = append(line, r)
			}
			col++
			i += len(string(r))
		}
	}
	return string(line)
}

// TestAuditProgress: on a terminal, audit redraws one line as reviews are
// answered ("audited N/M", "+, listing" while M may grow) and clears it
// at the end; on anything else it writes nothing, so that stdout carries
// the report and stderr the summary alone.
func TestAuditProgress(t *testing.T) {
	steps := []audit.Progress{{Done: 1, Queued: 3, Listing: true}, {Done: 2, Queued: 5, Listing: true}, {Done: 3, Queued: 5}, {Done: 5, Queued: 5}}
	file, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })
	tests := []struct {
		name  string
		tty   bool
		every time.Duration
		// want are the lines shown, in order; none: nothing written.
		want []string
	}{
		{name: "a terminal", tty: true, want: []string{"audited 1/3+, listing", "audited 2/5+, listing", "audited 3/5", "audited 5/5"}},
		{name: "a terminal, redrawn at most every interval", tty: true, every: time.Hour, want: []string{"audited 1/3+, listing"}},
		{name: "a pipe or a CI log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &fakeTerminal{tty: tt.tty}
			progress, done := newProgress(w, tt.every)
			if (progress != nil) != tt.tty {
				t.Fatalf("progress shown %v on a terminal %v", progress != nil, tt.tty)
			}
			var shown []string
			for _, p := range steps {
				if progress != nil {
					progress(p)
				}
				if s := screen(w.String()); len(shown) == 0 || shown[len(shown)-1] != s {
					shown = append(shown, s)
				}
			}
			done()
			if len(tt.want) == 0 {
				if w.Len() != 0 {
					t.Fatalf("wrote %q to a writer that is not a terminal", w.String())
				}
				return
			}
			if strings.Join(shown, "|") != strings.Join(tt.want, "|") {
				t.Errorf("lines shown %q, want %q", shown, tt.want)
			}
			if s := screen(w.String()); s != "" || !strings.HasSuffix(w.String(), "\r\033[K") {
				t.Errorf("after done the line shows %q (output %q), want it cleared", s, w.String())
			}
		})
	}
	t.Run("a file", func(t *testing.T) {
		if progress, _ := newProgress(file, 0); progress != nil {
			t.Error("progress shown on a file")
		}
	})
}
