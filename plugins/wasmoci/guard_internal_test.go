package wasmoci

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

type answer func(*http.Request) (*http.Response, error)

func (f answer) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// No request leaves for a non-loopback registry over plain HTTP unless it is listed.
func TestPlainHTTPOnlyToLoopbackAndListed(t *testing.T) {
	var sent []string
	next := answer(func(r *http.Request) (*http.Response, error) {
		sent = append(sent, r.URL.Host)
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	})
	g := &guard{next: next, insecure: map[string]bool{"registry.internal:5000": true}, maxManifest: 10}
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:5000/v2/", true},
		{"http://localhost:5000/v2/", true},
		{"http://[::1]:5000/v2/", true},
		{"http://registry.internal:5000/v2/", true},
		{"http://registry.internal:5001/v2/", false},
		{"http://10.1.2.3:5000/v2/", false},
		{"http://192.168.1.2/v2/", false},
		{"http://build.local/v2/", false},
		{"https://10.1.2.3:5000/v2/", true},
	} {
		sent = nil
		req, _ := http.NewRequest(http.MethodGet, tt.url, nil)
		_, err := g.RoundTrip(req)
		var pe *PlainHTTPError
		if tt.ok != (err == nil) || (!tt.ok && (!errors.As(err, &pe) || len(sent) != 0)) {
			t.Errorf("%s: err %v, sent %v", tt.url, err, sent)
		}
	}
}

func TestPlanFetch(t *testing.T) {
	h := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("a", 64)}
	l := func(mt types.MediaType) v1.Descriptor { return v1.Descriptor{MediaType: mt, Size: 10, Digest: h} }
	m := func(cfg types.MediaType, ls ...v1.Descriptor) *v1.Manifest {
		return &v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, Config: v1.Descriptor{MediaType: cfg}, Layers: ls}
	}
	for _, tt := range []struct {
		name   string
		m      *v1.Manifest
		layout Layout
		err    string
	}{
		{"cncf", m(MediaTypeWasmConfig, l(MediaTypeWasmLayer)), LayoutCNCF, ""},
		{"wasm-to-oci", m(MediaTypeWasmToOCIConfig, l(MediaTypeWasmToOCILayer)), LayoutWasmToOCI, ""},
		{"istio", m(MediaTypeIstioConfig, l(MediaTypeIstioLayer)), LayoutIstio, ""},
		{"istio compat", m(types.DockerConfigJSON, l(types.DockerLayer)), LayoutIstioCompat, ""},
		{"two wasm layers", m(MediaTypeWasmConfig, l(MediaTypeWasmLayer), l(MediaTypeWasmLayer)), "", "2 wasm layers"},
		{"tar layer under a wasm config", m(MediaTypeWasmConfig, l(types.OCILayer)), "", "no wasm layer"},
		{"no layers", m(MediaTypeWasmConfig), "", "no layers"},
		{"index", &v1.Manifest{MediaType: types.OCIImageIndex}, "", "not an image manifest"},
		{"foreign", m(MediaTypeWasmConfig, v1.Descriptor{MediaType: MediaTypeWasmLayer, Size: 1, Digest: h, URLs: []string{"https://elsewhere"}}), "", "foreign URLs"},
		{"too large", m(MediaTypeWasmConfig, v1.Descriptor{MediaType: MediaTypeWasmLayer, Size: 1 << 30, Digest: h}), "", "over the limit"},
	} {
		p, err := PlanFetch(tt.m, 1<<20)
		if tt.err == "" && (err != nil || p.Layout != tt.layout) || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%s: plan %+v, err %v", tt.name, p, err)
		}
	}
}
