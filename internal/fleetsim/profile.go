package fleetsim

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// freeLoopbackAddr returns a loopback address with a port that was free a moment ago.
func freeLoopbackAddr() (string, error) {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// profileHub records the hub's CPU profile for d from its --pprof-addr into file.
func profileHub(ctx context.Context, pprofAddr string, d time.Duration, file string) error {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pprofAddr, max(int(d.Seconds()), 1))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("hub profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("hub profile: %s", resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close() // already failing: the first error is the one returned
		return fmt.Errorf("hub profile %s: %w", file, err)
	}
	return f.Close()
}
