package e2e

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
)

// pgCounter is a TCP proxy in front of PostgreSQL that counts the
// statements clients execute: each simple Query message and each Execute
// message of the extended protocol (a prepared statement's Parse and
// Describe are not statements). BEGIN and COMMIT count; the pool's
// liveness ping does not.
type pgCounter struct {
	mu    sync.Mutex
	stmts int
	addr  string
}

func startPGCounter(t *testing.T, target string) *pgCounter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &pgCounter{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var conns sync.Map
	go func() {
		for {
			cl, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = cl.Close()
				continue
			}
			conns.Store(cl, up)
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(cl, up); _ = cl.Close() }()
			go func() { defer wg.Done(); c.pipe(up, cl); _ = up.Close() }()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		conns.Range(func(k, v any) bool { _ = k.(net.Conn).Close(); _ = v.(net.Conn).Close(); return true })
		wg.Wait()
	})
	return c
}

// pipe forwards the client's messages to the server, counting statements.
// The first messages (SSLRequest, StartupMessage) have no type byte.
func (c *pgCounter) pipe(dst io.Writer, src io.Reader) {
	var hdr [5]byte
	started := false
	for {
		if !started {
			if _, err := io.ReadFull(src, hdr[:4]); err != nil {
				return
			}
			n := int(binary.BigEndian.Uint32(hdr[:4]))
			body := make([]byte, max(n-4, 0))
			if _, err := io.ReadFull(src, body); err != nil {
				return
			}
			// SSLRequest and GSSENCRequest are answered by one byte; the
			// startup message (protocol 3.0) starts the typed stream.
			if len(body) >= 4 && binary.BigEndian.Uint32(body[:4]) == 196608 {
				started = true
			}
			if _, err := dst.Write(append(hdr[:4:4], body...)); err != nil {
				return
			}
			continue
		}
		if _, err := io.ReadFull(src, hdr[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[1:]))
		body := make([]byte, max(n-4, 0))
		if _, err := io.ReadFull(src, body); err != nil {
			return
		}
		// pgxpool pings a connection idle for a second before lending it
		// ("-- ping"): a matter of timing, not of the task.
		if hdr[0] == 'E' || hdr[0] == 'Q' && string(body) != "-- ping\x00" {
			c.mu.Lock()
			c.stmts++
			c.mu.Unlock()
		}
		if _, err := dst.Write(append(hdr[:], body...)); err != nil {
			return
		}
	}
}

func (c *pgCounter) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.stmts
	c.stmts = 0
	return n
}
