// Package web is the decision explorer's page: plain ES modules and CSS embedded in the
// binary, served under /explorer/ by the API server (which authenticates and authorizes
// the request before it reaches Handler). The page holds no data of its own: it reads the
// records through the read-only API explorer.wasmkube.io/v1alpha1 with the viewer's own
// credential, so a user sees only what that API lets them read. See docs/explorer.md.
package web

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// Prefix is where the API server mounts the page.
const Prefix = "/explorer/"

//go:embed static
var static embed.FS

var indexTmpl = template.Must(template.ParseFS(static, "static/index.html"))

// View is which page a URL under Prefix shows.
type View string

const (
	ViewHome    View = "home"
	ViewPod     View = "pod"
	ViewRequest View = "request"
	ViewPolicy  View = "policy"
	ViewNode    View = "node"
	// ViewAsset is a file under static/ (scripts, styles).
	ViewAsset View = "asset"
)

// Page is the parsed form of a URL under Prefix.
type Page struct {
	View View
	// Args are the URL's names: namespace and name of a pod, the record ID of a request,
	// the name of a policy or node, the file of an asset.
	Args []string
	// Base is the relative URL of Prefix as seen from this URL ("./", "../../"): the page
	// builds every other URL from it, so it works unchanged behind a proxy that mounts
	// the server under a path of its own (kubectl proxy --api-prefix).
	Base string
}

// ErrNotFound is returned by Route for a URL that names no page.
var ErrNotFound = errors.New("no such page")

// Route parses rest, the URL path after Prefix as the browser sent it (trailing slash
// included: it changes what relative URLs resolve to).
func Route(rest string) (Page, error) {
	p := Page{Base: strings.Repeat("../", strings.Count(rest, "/"))}
	if p.Base == "" {
		p.Base = "./"
	}
	parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	for _, s := range parts {
		if s == "." || s == ".." {
			return Page{}, fmt.Errorf("%w: %q", ErrNotFound, rest)
		}
	}
	n := len(parts)
	switch {
	case rest == "" || rest == "index.html":
		p.View = ViewHome
	case n == 3 && parts[0] == "pods" && parts[1] != "" && parts[2] != "":
		p.View, p.Args = ViewPod, parts[1:]
	case n == 2 && parts[0] == "requests" && parts[1] != "":
		p.View, p.Args = ViewRequest, parts[1:]
	case n == 2 && parts[0] == "policies" && parts[1] != "":
		p.View, p.Args = ViewPolicy, parts[1:]
	case n == 2 && parts[0] == "nodes" && parts[1] != "":
		p.View, p.Args = ViewNode, parts[1:]
	case n >= 2 && parts[0] == "static" && !strings.HasSuffix(rest, "/"):
		p.View, p.Args = ViewAsset, []string{path.Join(parts[1:]...)}
	default:
		return Page{}, fmt.Errorf("%w: %q", ErrNotFound, rest)
	}
	return p, nil
}

// Handler serves the page at the URLs under Prefix; a request for Prefix without its
// trailing slash is redirected (relatively) to it. The caller authenticates and
// authorizes first.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the explorer page is read-only: use GET", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path+"/" == Prefix {
		// Relative, so that a proxy's prefix is kept (http.Redirect would make it
		// absolute).
		w.Header().Set("Location", path.Base(r.URL.Path)+"/")
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	p, err := Route(rest)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	h := w.Header()
	// Everything comes from this server: no inline script, no other origin.
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if p.View == ViewAsset {
		serveAsset(w, r, p.Args[0])
		return
	}
	var buf bytes.Buffer
	if err := indexTmpl.Execute(&buf, p); err != nil {
		http.Error(w, "render the explorer page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	_, _ = w.Write(buf.Bytes())
}

func serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	b, err := fs.ReadFile(static, "static/"+name)
	if err != nil || name == "index.html" {
		http.Error(w, fmt.Sprintf("no such file %q in the explorer's assets", name), http.StatusNotFound)
		return
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	// The assets change with the binary; no-cache makes the browser revalidate, which
	// is cheap here and keeps a page from mixing two versions after an upgrade.
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(b)
}
