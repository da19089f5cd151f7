// Package faultproxy is a TCP proxy on loopback that fault tests put in
// front of a service (the AWS emulator, PostgreSQL) to make it go away and
// come back while the code under test keeps running.
//
// The proxy has three states:
//
//   - Up: connections are forwarded to the target.
//   - Cut: every open connection is reset (RST) and every new one is
//     accepted and reset at once, so clients see "connection reset by
//     peer" — the service is gone, and clients find out at once.
//   - Paused: open connections stop moving bytes and new ones are accepted
//     but not forwarded — a black hole; clients find out only through
//     their own timeouts.
//
// Restore returns to Up: paused connections resume, new ones are forwarded.
// The listening port never changes, so clients need not be reconfigured.
//
// A Shape makes the proxy behave like a distant service such as S3 (the
// transfer benchmarks and the kill tests use it): every connection is
// capped at Rate bytes per second in each direction, and every request
// waits Latency before it is forwarded (a request is recognised as the
// first bytes a client sends after the target has answered, or on a new
// connection — HTTP/1.1 request/response turns). Stats counts the bytes
// each way, so a test can tell how much was sent again after a failure.
// All methods are safe for concurrent use.
//
// HTTP (http.go) is an HTTP reverse proxy for faults inside a response:
// armed with CutBody, it cuts one matching response to half its body and
// frames the half as the whole (a read that goes wrong without an error);
// Limit answers 503 SlowDown to one bucket's requests beyond a rate, as S3
// does on a hot prefix; Fail answers every matching request with an error
// (a service that answers only errors) — rate.go.
package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// State is the proxy's mode.
type State int

// The states (see the package documentation).
const (
	Up State = iota
	Cut
	Paused
)

func (s State) String() string {
	switch s {
	case Up:
		return "up"
	case Cut:
		return "cut"
	case Paused:
		return "paused"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Stats counts what the proxy did.
type Stats struct {
	Accepted  int64 // connections accepted
	Forwarded int64 // connections forwarded to the target
	Reset     int64 // connections reset by Cut (open ones and new ones)
	Requests  int64 // request turns seen (see Shape)
	BytesUp   int64 // bytes forwarded from clients to the target
	BytesDown int64 // bytes forwarded from the target to clients
}

// Shape is how each connection is held back (zero: not at all).
type Shape struct {
	// Rate caps each connection in each direction, bytes per second.
	Rate int64
	// Latency delays each request.
	Latency time.Duration
}

// Proxy forwards TCP connections from a loopback port to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	state  State
	resume chan struct{} // closed when a pause ends
	conns  map[*pair]struct{}
	closed bool

	shape atomic.Pointer[Shape]

	accepted, forwarded, reset, requests, up, down atomic.Int64
	wg                                             sync.WaitGroup
}

// pair is one client connection and its upstream connection.
type pair struct {
	client, upstream net.Conn
	// answered is set when the target sent bytes since the client last
	// did: the client's next bytes start a request.
	answered atomic.Bool
}

// New listens on 127.0.0.1 (a free port) and forwards to target
// ("host:port"). The target must be a loopback address: fault tests never
// reach beyond the machine.
func New(target string) (*Proxy, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: target %q: %w", target, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("faultproxy: target %q is not a loopback address", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[*pair]struct{}{}, resume: make(chan struct{})}
	p.shape.Store(&Shape{})
	close(p.resume) // not paused
	p.wg.Go(p.acceptLoop)
	return p, nil
}

// Addr is the proxy's listening address ("127.0.0.1:port").
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is "http://" + Addr(), for endpoint variables such as
// AWS_ENDPOINT_URL.
func (p *Proxy) URL() string { return "http://" + p.Addr() }

// State returns the current state.
func (p *Proxy) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// Stats returns the counters so far.
func (p *Proxy) Stats() Stats {
	return Stats{Accepted: p.accepted.Load(), Forwarded: p.forwarded.Load(), Reset: p.reset.Load(),
		Requests: p.requests.Load(), BytesUp: p.up.Load(), BytesDown: p.down.Load()}
}

// SetShape shapes every connection from now on (open ones included).
func (p *Proxy) SetShape(s Shape) { p.shape.Store(&s) }

// pacer holds a byte stream to a rate: after n bytes it waits until the
// stream is no further ahead than the rate allows. A stream that fell
// behind (its sleeps overslept on a busy machine, or it waited for the
// target) may catch up by a burst of slack(rate) bytes, no more: a stream
// idle for longer starts afresh, so over any stretch of time a connection
// moves at most the rate's worth plus one burst.
type pacer struct {
	start time.Time
	sent  int64
}

// slack is a burst: 20 ms at the rate, at least 64 KiB. Scheduler delays
// on a loaded machine run to several milliseconds; a smaller burst loses
// each oversleep for good and caps a connection well below its rate.
func slack(rate int64) int64 { return max(64<<10, rate/50) }

func (pc *pacer) wait(n int, rate int64) {
	if rate <= 0 {
		return
	}
	burst := slack(rate)
	now := time.Now()
	if pc.start.IsZero() || now.Sub(pc.start) > time.Duration(float64(pc.sent+burst)/float64(rate)*float64(time.Second)) {
		// Behind by more than a burst (idle): start afresh with one.
		pc.start, pc.sent = now.Add(-time.Duration(float64(burst)/float64(rate)*float64(time.Second))), 0
	}
	pc.sent += int64(n)
	due := pc.start.Add(time.Duration(float64(pc.sent) / float64(rate) * float64(time.Second)))
	if d := due.Sub(now); d > 0 {
		time.Sleep(d)
	}
}

// Cut resets every open connection and every new one until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.setLocked(Cut)
	conns := make([]*pair, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		p.reset.Add(1)
		resetConn(c.client)
		c.upstream.Close()
	}
}

// Pause stops moving bytes on every connection, open or new, until Restore.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setLocked(Paused)
}

// Restore forwards again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setLocked(Up)
}

func (p *Proxy) setLocked(s State) {
	if p.state == Paused && s != Paused {
		close(p.resume)
	}
	if p.state != Paused && s == Paused {
		p.resume = make(chan struct{})
	}
	p.state = s
}

// Close stops listening, closes every connection and waits for the proxy's
// goroutines. Safe to call more than once.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.setLocked(Up) // wake paused copiers so they see the closed connections
	conns := make([]*pair, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	for _, c := range conns {
		c.client.Close()
		c.upstream.Close()
	}
	p.wg.Wait()
	return err
}

// resetConn closes c with SO_LINGER 0, so the peer gets an RST rather than
// an orderly FIN.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

func (p *Proxy) acceptLoop() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.accepted.Add(1)
		p.wg.Go(func() { p.serve(c) })
	}
}

// waitUp blocks while the proxy is paused and reports the state it then
// found (Up or Cut), or false when the proxy closed.
func (p *Proxy) waitUp() (State, bool) {
	for {
		p.mu.Lock()
		s, resume, closed := p.state, p.resume, p.closed
		p.mu.Unlock()
		if closed {
			return s, false
		}
		if s != Paused {
			return s, true
		}
		<-resume
	}
}

func (p *Proxy) serve(client net.Conn) {
	s, ok := p.waitUp()
	if !ok {
		client.Close()
		return
	}
	if s == Cut {
		p.reset.Add(1)
		resetConn(client)
		return
	}
	upstream, err := net.Dial("tcp", p.target)
	if err != nil {
		resetConn(client)
		return
	}
	c := &pair{client: client, upstream: upstream}
	p.mu.Lock()
	if p.closed || p.state == Cut {
		p.mu.Unlock()
		p.reset.Add(1)
		resetConn(client)
		upstream.Close()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	p.forwarded.Add(1)

	c.answered.Store(true) // the first bytes are a request
	var done sync.WaitGroup
	done.Go(func() { p.copy(c, upstream, client, true) })
	done.Go(func() { p.copy(c, client, upstream, false) })
	done.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	client.Close()
	upstream.Close()
}

// copy moves bytes from src to dst (toTarget: the client's side),
// holding each chunk while the proxy is paused and as the Shape says. An
// orderly EOF is passed on as a half-close; any other end (an error, a
// cut) closes both connections, which ends the opposite copier too.
func (p *Proxy) copy(c *pair, dst, src net.Conn, toTarget bool) {
	buf := make([]byte, 32*1024)
	var pc pacer
	for {
		n, err := src.Read(buf)
		if n > 0 {
			s, ok := p.waitUp()
			if !ok || s == Cut {
				src.Close()
				dst.Close()
				return
			}
			shape := p.shape.Load()
			if toTarget {
				if c.answered.Swap(false) {
					p.requests.Add(1)
					if shape.Latency > 0 {
						time.Sleep(shape.Latency)
					}
				}
			} else {
				c.answered.Store(true)
			}
			pc.wait(n, shape.Rate)
			if toTarget {
				p.up.Add(int64(n))
			} else {
				p.down.Add(int64(n))
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				dst.Close()
				return
			}
		}
		if err != nil {
			if tc, ok := dst.(*net.TCPConn); ok && errors.Is(err, io.EOF) {
				_ = tc.CloseWrite()
				return
			}
			src.Close()
			dst.Close()
			return
		}
	}
}
