// Package browsertest drives Debian's Chromium headless from Go tests (through
// github.com/chromedp/chromedp), to check the decision explorer's page as a browser
// renders it. No browser is downloaded: the binary is /usr/bin/chromium (installed by
// scripts/deps.sh), or $WASMKUBE_CHROMIUM.
//
//	b := browsertest.Start(t, browsertest.Options{Header: map[string]string{"Authorization": "Bearer " + token}})
//	b.Open(url)
//	b.WaitFor(`document.querySelector("#matrix")`, "the matrix")
//	b.Screenshot("pod")
//
// Screenshots go to $WASMKUBE_TEST_ARTIFACTS/<test name>/ when that is set, otherwise to
// the test's t.TempDir() (and are removed with it); their paths are logged.
package browsertest

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// ChromiumEnv names another Chromium binary; ArtifactsEnv a directory for screenshots.
const (
	ChromiumEnv    = "WASMKUBE_CHROMIUM"
	ArtifactsEnv   = "WASMKUBE_TEST_ARTIFACTS"
	defaultBinary  = "/usr/bin/chromium"
	defaultTimeout = 60 * time.Second
)

// Options of a browser.
type Options struct {
	// Header is sent with every request of the page (the page's own fetches and
	// server-sent events included): the bearer token of the user the test acts as.
	Header map[string]string
	// TrustSPKI are base64 SHA-256 hashes of server public keys (SPKIHash) whose
	// certificates Chromium accepts although no CA it knows signed them: the test
	// server's self-made CA. Nothing else is trusted beyond the system's roots.
	TrustSPKI []string
	// Width and Height of the window; 1440x1000 when zero.
	Width, Height int
}

// Browser is one headless Chromium with one tab, closed when the test ends.
type Browser struct {
	t   testing.TB
	ctx context.Context

	mu     sync.Mutex
	errors []string
}

// Start launches Chromium. A test that cannot find it fails (the browser tests are part
// of `make test`; scripts/deps.sh installs it).
func Start(t testing.TB, o Options) *Browser {
	t.Helper()
	bin := os.Getenv(ChromiumEnv)
	if bin == "" {
		bin = defaultBinary
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("browsertest: no Chromium at %s (%v): run scripts/deps.sh, or set %s", bin, err, ChromiumEnv)
	}
	if o.Width == 0 {
		o.Width, o.Height = 1440, 1000
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.WindowSize(o.Width, o.Height),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-proxy-server", true),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to start its sandbox as root (CI runs the tests as root).
		opts = append(opts, chromedp.NoSandbox)
	}
	if len(o.TrustSPKI) > 0 {
		opts = append(opts, chromedp.Flag("ignore-certificate-errors-spki-list", strings.Join(o.TrustSPKI, ",")))
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &Browser{t: t, ctx: ctx}
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	if err := chromedp.Listen(ctx, b.onEvent); err != nil {
		t.Fatalf("browsertest: start Chromium: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("browsertest: start Chromium: %v", err)
	}
	if len(o.Header) > 0 {
		h := network.Headers{}
		for k, v := range o.Header {
			h[k] = v
		}
		if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: h}); err != nil {
			t.Fatalf("browsertest: set headers: %v", err)
		}
	}
	return b
}

// onEvent keeps the page's uncaught exceptions and console errors for the test's log.
func (b *Browser) onEvent(ev any) {
	var msg string
	switch e := ev.(type) {
	case *cdpruntime.EventExceptionThrown:
		d := e.ExceptionDetails
		msg = fmt.Sprintf("uncaught: %s at %s:%d", d.Text, d.URL, d.LineNumber+1)
		if d.Exception != nil && d.Exception.Description != "" {
			msg += ": " + d.Exception.Description
		}
	case *cdpruntime.EventConsoleAPICalled:
		if e.Type != cdpruntime.ConsoleAPICalledTypeError {
			return
		}
		parts := []string{}
		for _, a := range e.Args {
			if a.Description != "" {
				parts = append(parts, a.Description)
			} else {
				parts = append(parts, strings.Trim(string(a.Value), `"`))
			}
		}
		msg = "console.error: " + strings.Join(parts, " ")
	default:
		return
	}
	b.mu.Lock()
	b.errors = append(b.errors, msg)
	b.mu.Unlock()
}

// Errors are the page's uncaught exceptions and console errors so far.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// Open navigates to url and returns the HTTP status of the document.
func (b *Browser) Open(url string) int64 {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, defaultTimeout)
	defer cancel()
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(url))
	if err != nil {
		b.t.Fatalf("browsertest: open %s: %v", url, err)
	}
	return resp.Status
}

// WaitFor waits until the JavaScript expression is truthy; on timeout the test fails
// with what the page shows and its errors, and a screenshot.
func (b *Browser) WaitFor(expr, what string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, defaultTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(defaultTimeout))); err != nil {
		shot := b.Screenshot("timeout-" + what)
		text, _ := Eval[string](b, `document.body ? document.body.innerText : ""`)
		b.t.Fatalf("browsertest: waiting for %s (%s): %v\npage errors: %q\nscreenshot: %s\npage text:\n%s", what, expr, err, b.Errors(), shot, text)
	}
}

// Eval evaluates a JavaScript expression in the page and decodes its value.
func Eval[T any](b *Browser, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, defaultTimeout)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAsValue))
}

// MustEval is Eval that fails the test on error.
func MustEval[T any](b *Browser, expr string) T {
	b.t.Helper()
	v, err := Eval[T](b, expr)
	if err != nil {
		b.t.Fatalf("browsertest: evaluate %s: %v (page errors: %q)", expr, err, b.Errors())
	}
	return v
}

// Click clicks the first element matching the CSS selector.
func (b *Browser) Click(selector string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, defaultTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(selector))); err != nil {
		b.t.Fatalf("browsertest: click %s: %v", selector, err)
	}
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Screenshot saves the whole page as NAME.png in ArtifactDir and returns its path.
func (b *Browser) Screenshot(name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, defaultTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("browsertest: screenshot %s: %v", name, err)
		return ""
	}
	p := filepath.Join(ArtifactDir(b.t), unsafeName.ReplaceAllString(name, "-")+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatalf("browsertest: save screenshot: %v", err)
	}
	b.t.Logf("screenshot: %s", p)
	return p
}

var artifactDirs sync.Map // test name -> dir

// ArtifactDir is $WASMKUBE_TEST_ARTIFACTS/<test name> (created), or the test's
// t.TempDir() when the variable is unset.
func ArtifactDir(t testing.TB) string {
	if d, ok := artifactDirs.Load(t.Name()); ok {
		return d.(string)
	}
	var dir string
	if root := os.Getenv(ArtifactsEnv); root != "" {
		dir = filepath.Join(root, unsafeName.ReplaceAllString(t.Name(), "-"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("browsertest: %s: %v", ArtifactsEnv, err)
		}
	} else {
		dir = t.TempDir()
	}
	artifactDirs.Store(t.Name(), dir)
	return dir
}

// SPKIHash connects to the TLS server at addr (host:port) and returns the base64
// SHA-256 of its certificate's public key, for Options.TrustSPKI. The test knows the
// server it started; the hash pins exactly that server's key.
func SPKIHash(addr string) (string, error) {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads the key to pin it
	if err != nil {
		return "", fmt.Errorf("read the certificate of %s: %w", addr, err)
	}
	defer conn.Close()
	certs := conn.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return "", fmt.Errorf("%s sent no certificate", addr)
	}
	sum := sha256.Sum256(certs[0].RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:]), nil
}
