package faultproxy

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echoServer answers each line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return // the proxy cut the connection
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func TestProxyCountsCutsAndBlackholes(t *testing.T) {
	t.Parallel()
	p, err := Start(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip := func(msg string, timeout time.Duration) (string, error) {
		if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte(msg + "\n")); err != nil {
			return "", err
		}
		return r.ReadString('\n')
	}
	if got, err := roundTrip("hello", 5*time.Second); err != nil || got != "hello\n" {
		t.Fatalf("echo through proxy = %q, %v", got, err)
	}
	if up, down := p.Bytes(); up != 6 || down != 6 {
		t.Errorf("bytes = %d up, %d down; want 6 and 6", up, down)
	}

	p.Blackhole(true)
	if _, err := roundTrip("lost", 300*time.Millisecond); err == nil {
		t.Error("a black-holed connection answered")
	}
	p.Blackhole(false)
	// The held bytes are delivered once the hole closes.
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadString('\n'); err != nil || got != "lost\n" {
		t.Errorf("after black-hole: %q, %v", got, err)
	}

	p.Cut()
	if _, err := roundTrip("after cut", 2*time.Second); err == nil {
		t.Error("a cut connection still answered")
	}
	p.Refuse(true)
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		if err := c2.SetDeadline(time.Now().Add(2 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := bufio.NewReader(c2).ReadString('\n'); err == nil {
			t.Error("a refused connection was served")
		}
		c2.Close()
	}
}
