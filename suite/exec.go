package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/hookback/hookback/field"
)

// ExecOptions start the developer's webhook server (--exec).
type ExecOptions struct {
	// Command is run by /bin/sh -c, in Dir, with Env added to hookback's
	// environment.
	Command string
	Dir     string
	Env     []string
	// Ready reports nil once the server accepts TLS as the cases will
	// reach it; Deadline bounds the wait (the first go run compiles).
	Ready    func(ctx context.Context) error
	Deadline time.Duration
	// Grace is how long the server has to stop after SIGTERM before it is
	// killed.
	Grace time.Duration
}

// ErrServer marks a server that did not come up.
var ErrServer = errors.New("suite: the server under test")

// maxOutput bounds the server output kept (the newest is kept).
const maxOutput = 4 << 20

// Server is a running --exec server.
type Server struct {
	cmd  *exec.Cmd
	out  *outputBuffer
	done chan error
	opts ExecOptions
}

var _ Output = (*outputBuffer)(nil)

// StartServer starts the command in its own process group and waits until
// Ready says it serves, the command exits (an error with its output), or
// the deadline passes (the server is stopped).
func StartServer(ctx context.Context, opts ExecOptions) (*Server, error) {
	cmd := shellCommand(opts.Command)
	cmd.Dir = opts.Dir
	cmd.Env = append(os.Environ(), opts.Env...)
	out := &outputBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrServer, opts.Command, err)
	}
	s := &Server{cmd: cmd, out: out, done: make(chan error, 1), opts: opts}
	go func() { s.done <- cmd.Wait() }()
	deadline := time.NewTimer(opts.Deadline)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = opts.Ready(ctx); last == nil {
			return s, nil
		}
		select {
		case err := <-s.done:
			s.done <- err
			return nil, fmt.Errorf("%w %q exited before it served (%v); its output:\n%s", ErrServer, opts.Command, err, out.Since(0))
		case <-deadline.C:
			s.Stop()
			return nil, field.Advise("suite.ExecOptions.Deadline", "%w %q did not accept TLS within %s ({suite.ExecOptions.Deadline}): %v; its output:\n%s", ErrServer, opts.Command, opts.Deadline, last, out.Since(0))
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// Output is what the server wrote so far.
func (s *Server) Output() Output { return s.out }

// Stop sends SIGTERM to the server's process group, then SIGKILL after the
// grace period, and waits for it.
func (s *Server) Stop() {
	terminate(s.cmd.Process)
	grace := s.opts.Grace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-s.done:
		s.done <- err
	case <-t.C:
		kill(s.cmd.Process)
		err := <-s.done
		s.done <- err
	}
	// Whatever its children left behind in the group.
	kill(s.cmd.Process)
}

// outputBuffer keeps the server's output, readable by offset.
type outputBuffer struct {
	mu      sync.Mutex
	buf     []byte
	dropped int
}

func (b *outputBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - maxOutput; over > 0 {
		b.buf = append([]byte(nil), b.buf[over:]...)
		b.dropped += over
	}
	return len(p), nil
}

// Len is the offset of the next byte written.
func (b *outputBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped + len(b.buf)
}

// Since is what was written from offset on (what is still kept).
func (b *outputBuffer) Since(offset int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := max(offset-b.dropped, 0)
	if i > len(b.buf) {
		return ""
	}
	return string(b.buf[i:])
}
