// Package browsertest runs Debian's headless Chromium for tests and benchmarks of the
// dashboard, driven by chromedp, trusting the hub's TLS certificate by its public key (not by
// ignoring certificate errors), and saves screenshots for people to review.
package browsertest

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// DefaultChromium is where Debian's chromium package puts the browser.
const DefaultChromium = "/usr/bin/chromium"

// InstallHint is what to run when the browser is missing.
const InstallHint = "run `make chromium` (it runs apt-get install -y chromium)"

// Options configure a browser.
type Options struct {
	// ExecPath is the browser binary. Default $FLOTILLA_CHROMIUM, else DefaultChromium.
	ExecPath string
	// TrustSPKI are base64 SHA-256 hashes of the public keys of the TLS servers the browser
	// trusts beyond its own roots (see ServerSPKI).
	TrustSPKI []string
	// Width and Height of the window. Default 1400 x 900.
	Width, Height int
	// Timeout bounds everything the browser does. Default 10 minutes.
	Timeout time.Duration
}

func (o *Options) setDefaults() {
	if o.ExecPath == "" {
		o.ExecPath = os.Getenv("FLOTILLA_CHROMIUM")
	}
	if o.ExecPath == "" {
		o.ExecPath = DefaultChromium
	}
	if o.Width <= 0 {
		o.Width = 1400
	}
	if o.Height <= 0 {
		o.Height = 900
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
}

// Start starts a headless Chromium with a fresh profile and returns a chromedp context for its
// first tab. The browser is stopped when tb ends. A missing browser fails tb with a message
// that says how to install it.
func Start(tb testing.TB, opts Options) context.Context {
	tb.Helper()
	opts.setDefaults()
	if _, err := os.Stat(opts.ExecPath); err != nil {
		tb.Fatalf("browser %s: %v: the dashboard tests need Debian's chromium; %s", opts.ExecPath, err, InstallHint)
	}
	flags := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(opts.ExecPath),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox, // root in a container: Chromium's sandbox cannot start
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("font-render-hinting", "none"),
		chromedp.UserDataDir(tb.TempDir()),
		chromedp.WindowSize(opts.Width, opts.Height),
	}
	if len(opts.TrustSPKI) > 0 {
		list := ""
		for i, h := range opts.TrustSPKI {
			if i > 0 {
				list += ","
			}
			list += h
		}
		flags = append(flags, chromedp.Flag("ignore-certificate-errors-spki-list", list))
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), flags...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx, chromedp.WithErrorf(tb.Logf))
	ctx, cancelTimeout := context.WithTimeout(ctx, opts.Timeout)
	if err := chromedp.Do(ctx); err != nil {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
		tb.Fatalf("start browser %s: %v", opts.ExecPath, err)
	}
	tb.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}

// NewTab opens another tab of the same browser (with its own sessionStorage) and returns its
// context, closed when tb ends.
func NewTab(tb testing.TB, browser context.Context) context.Context {
	tb.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		tb.Fatalf("open tab: %v", err)
	}
	tb.Cleanup(cancel)
	return ctx
}

// ServerSPKI connects to the TLS server at rawURL, verifies its certificate chain against the
// CA in caFile for the URL's host, and returns the base64 SHA-256 hash of the leaf's public key:
// what --ignore-certificate-errors-spki-list takes. The browser then trusts exactly the
// certificate that Go verified.
func ServerSPKI(ctx context.Context, rawURL, caFile string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("server URL %q: %w", rawURL, err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return "", fmt.Errorf("server CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return "", fmt.Errorf("server CA %s: no PEM certificate in it", caFile)
	}
	d := tls.Dialer{Config: &tls.Config{RootCAs: pool, ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}, NetDialer: &net.Dialer{Timeout: 10 * time.Second}}
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return "", fmt.Errorf("server %s: %w", u.Host, err)
	}
	defer conn.Close()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return "", errors.New("server " + u.Host + ": no certificate")
	}
	sum := sha256.Sum256(certs[0].RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}

// ScreenshotDir is where screenshots go: $FLOTILLA_SCREENSHOTS, else out/screenshots at the
// root of the module (the directory holding go.mod above the working directory).
func ScreenshotDir() (string, error) {
	if d := os.Getenv("FLOTILLA_SCREENSHOTS"); d != "" {
		return d, os.MkdirAll(d, 0o755)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("screenshots: no go.mod above the working directory; set FLOTILLA_SCREENSHOTS")
		}
		dir = parent
	}
	d := filepath.Join(dir, "out", "screenshots")
	return d, os.MkdirAll(d, 0o755)
}

// Screenshot saves the page of ctx as ScreenshotDir()/name.png (the whole page when full)
// and logs where.
func Screenshot(tb testing.TB, ctx context.Context, name string, full bool) {
	tb.Helper()
	dir, err := ScreenshotDir()
	if err != nil {
		tb.Errorf("screenshot %s: %v", name, err)
		return
	}
	action := chromedp.CaptureScreenshot()
	if full {
		action = chromedp.FullScreenshot(100)
	}
	png, err := chromedp.Run(ctx, action)
	if err != nil {
		tb.Errorf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(dir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		tb.Errorf("screenshot %s: %v", name, err)
		return
	}
	tb.Logf("screenshot: %s", p)
}
