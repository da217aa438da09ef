package localcluster

import (
	"context"
	"fmt"
	"net"
)

// freePorts asks the kernel for n distinct free loopback TCP ports. The listeners are all open at
// once, so the n ports differ, and closed before returning; a port can still be taken by another
// process before etcd or kube-apiserver binds it, which Start detects and retries.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free loopback port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
