package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/hookback/hookback/audit"
)

// progressEvery bounds how often audit's progress line is redrawn.
const progressEvery = 100 * time.Millisecond

// terminalWriter is a writer that says whether it is a terminal: the seam
// a test's fake terminal uses; an *os.File is asked through term.
type terminalWriter interface {
	io.Writer
	IsTerminal() bool
}

// isTerminal reports whether w is a terminal someone watches.
func isTerminal(w io.Writer) bool {
	switch t := w.(type) {
	case terminalWriter:
		return t.IsTerminal()
	case *os.File:
		return term.IsTerminal(int(t.Fd()))
	}
	return false
}

// newProgress shows audit's progress on w, one line redrawn at most every
// interval ("audited 120/300", "+" while objects are still being listed),
// when w is a terminal; on anything else (a CI log, a file, a pipe) it
// returns nil and writes nothing, so what goes there is the report and
// the summary alone. done clears the line.
func newProgress(w io.Writer, every time.Duration) (func(audit.Progress), func()) {
	if !isTerminal(w) {
		return nil, func() {}
	}
	var mu sync.Mutex
	var last time.Time
	shown := false
	progress := func(p audit.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < every {
			return
		}
		last, shown = time.Now(), true
		more := ""
		if p.Listing {
			more = "+, listing"
		}
		// \r and erase-line: the line is redrawn in place.
		fmt.Fprintf(w, "\r\033[Kaudited %d/%d%s", p.Done, p.Queued, more)
	}
	return progress, func() {
		mu.Lock()
		defer mu.Unlock()
		if shown {
			fmt.Fprint(w, "\r\033[K")
		}
	}
}
