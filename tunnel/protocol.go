// Package tunnel is hookback's reverse tunnel, for a laptop the cluster
// cannot route back to. A relay runs in the cluster (`hookback relay`, the
// same image as the in-cluster install) behind a Service the webhook
// configurations reference. The laptop reaches the relay's control port
// through the apiserver's pod port-forward, proves it is the session that
// deployed the relay with a per-session secret, and then carries every
// webhook connection over that one connection, multiplexed with yamux: the
// relay accepts the apiserver's TCP connection on its service port and
// opens a stream to the laptop, which hands it to its local TLS server. TLS
// ends on the laptop, so the relay only ever sees ciphertext.
//
// A Session is that tunnel's lifecycle for one hookback session: it deploys
// the relay (namespace when missing, Secret, Deployment, Service, all with
// the session's labels and Lease), keeps this process attached, and removes
// the relay again; Cleanup removes the relays crashed sessions left.
package tunnel

import (
	"bufio"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/hashicorp/yamux"
)

// The control stream's handshake, one line each way before yamux starts:
// the laptop sends helloPrefix and the secret, the relay answers "OK" or
// "DENIED" and closes.
const (
	helloPrefix = "HOOKBACK-RELAY/1 "
	answerOK    = "OK"
	// maxHello bounds what an unauthenticated peer can make the relay read.
	maxHello         = 512
	handshakeTimeout = 10 * time.Second
)

// ErrDenied is the relay's answer to a wrong secret.
var ErrDenied = errors.New("relay: the relay refused this session's secret (another session's relay, or a redeployed one)")

// hello sends the secret and reads the relay's answer.
func hello(conn net.Conn, secret string) error {
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	defer func() { _ = conn.SetDeadline(time.Time{}) }()
	if _, err := io.WriteString(conn, helloPrefix+secret+"\n"); err != nil {
		return fmt.Errorf("relay handshake: %w", err)
	}
	line, err := readLine(conn)
	if err != nil {
		return fmt.Errorf("relay handshake: %w", err)
	}
	if line != answerOK {
		return ErrDenied
	}
	return nil
}

// accept reads a hello and checks its secret in constant time; it answers
// either way. accepted runs between the check and the OK: what the relay
// must have done before the laptop learns it is attached.
func accept(conn net.Conn, secret string, accepted func()) error {
	_ = conn.SetDeadline(time.Now().Add(handshakeTimeout))
	defer func() { _ = conn.SetDeadline(time.Time{}) }()
	line, err := readLine(conn)
	if err != nil {
		return fmt.Errorf("read hello: %w", err)
	}
	got, ok := strings.CutPrefix(line, helloPrefix)
	if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(secret)) != 1 {
		_, _ = io.WriteString(conn, "DENIED\n")
		return errors.New("wrong or missing session secret")
	}
	accepted()
	_, err = io.WriteString(conn, answerOK+"\n")
	return err
}

// readLine reads one line byte by byte: nothing past it may be consumed,
// since yamux takes over the connection right after.
func readLine(conn net.Conn) (string, error) {
	r := bufio.NewReaderSize(io.LimitReader(conn, maxHello), 1)
	var b strings.Builder
	for {
		c, err := r.ReadByte()
		if err != nil {
			return "", err
		}
		if c == '\n' {
			return b.String(), nil
		}
		b.WriteByte(c)
		if b.Len() >= maxHello-1 {
			return "", errors.New("hello line too long")
		}
	}
}

// muxConfig is yamux's, logging through slog; keep-alives find a dead
// port-forward within a minute even when no webhook call is going on.
func muxConfig(log *slog.Logger) *yamux.Config {
	c := yamux.DefaultConfig()
	c.LogOutput = nil
	c.Logger = slog.NewLogLogger(log.Handler(), slog.LevelDebug)
	// A dead relay behind a port-forward that does not close is found by
	// the keep-alive alone: within 10 s the webhooks' path is re-dialled.
	c.KeepAliveInterval = 5 * time.Second
	c.ConnectionWriteTimeout = 5 * time.Second
	return c
}

// pipe copies both ways until both have ended, each end half-closing the
// other side, then closes both.
func pipe(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Half-close when the side supports it, so the other direction
		// can still finish its answer.
		switch d := dst.(type) {
		case interface{ CloseWrite() error }:
			_ = d.CloseWrite()
		case *yamux.Stream:
			_ = d.Close() // a yamux Close is a half-close: reads go on
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
	_ = a.Close()
	_ = b.Close()
}
