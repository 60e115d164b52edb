package faults

import (
	"io"
	"net"
	"sync"
	"time"
)

// proxy relays TCP connections to the first upstream that answers; cut
// drops every connection and refuses new ones until restore, as a network
// partition between one worker and every NATS node would.
type proxy struct {
	ln        net.Listener
	upstreams []string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func newProxy(upstreams []string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, upstreams: upstreams, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c] = true
		p.mu.Unlock()
		p.wg.Add(1)
		go p.relay(c)
	}
}

func (p *proxy) relay(c net.Conn) {
	defer p.wg.Done()
	defer p.forget(c)
	var up net.Conn
	for _, u := range p.upstreams {
		var err error
		if up, err = net.DialTimeout("tcp", u, time.Second); err == nil {
			break
		}
	}
	if up == nil {
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		up.Close()
		return
	}
	p.conns[up] = true
	p.mu.Unlock()
	defer p.forget(up)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

func (p *proxy) forget(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// partition drops every relayed connection and refuses new ones.
func (p *proxy) partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// heal lets connections through again.
func (p *proxy) heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

func (p *proxy) close() {
	p.ln.Close()
	p.partition()
	p.wg.Wait()
}
