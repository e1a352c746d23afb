package wasmoci

import (
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types of the layouts a module is pulled from (docs/oci.md, "Layouts").
const (
	// CNCF TAG Runtime's wasm artifact layout: what Push writes.
	MediaTypeWasmConfig types.MediaType = "application/vnd.wasm.config.v0+json"
	MediaTypeWasmLayer  types.MediaType = "application/wasm"
	// wasm-to-oci, as Kubewarden's policies are published.
	MediaTypeWasmToOCIConfig types.MediaType = "application/vnd.wasm.config.v1+json"
	MediaTypeWasmToOCILayer  types.MediaType = "application/vnd.wasm.content.layer.v1+wasm"
	// Istio's "oci" variant of its wasm image spec.
	MediaTypeIstioConfig types.MediaType = "application/vnd.module.wasm.config.v1+json"
	MediaTypeIstioLayer  types.MediaType = "application/vnd.module.wasm.content.layer.v1+wasm"
)

// IstioCompatFile is the module's name inside the one layer of Istio's "compat" variant
// (an ordinary container image whose layer is a tar holding the module).
const IstioCompatFile = "plugin.wasm"

// Layout names the way a module is packed in an OCI manifest.
type Layout string

const (
	LayoutCNCF        Layout = "cncf"        // config application/vnd.wasm.config.v0+json, layer application/wasm
	LayoutWasmToOCI   Layout = "wasm-to-oci" // layer application/vnd.wasm.content.layer.v1+wasm (Kubewarden)
	LayoutIstio       Layout = "istio"       // layer application/vnd.module.wasm.content.layer.v1+wasm
	LayoutIstioCompat Layout = "istio-compat"
)

// Plan is what to fetch for a module: the layer holding it and how to read it.
type Plan struct {
	Layout Layout
	Layer  v1.Descriptor
	// Tar: the layer is a (possibly gzipped) tar holding IstioCompatFile.
	Tar bool
}

// PlanFetch picks the module's layer out of a manifest, or says why the manifest is no
// wasm module. It does no I/O. maxModule bounds the layer's declared size.
func PlanFetch(m *v1.Manifest, maxModule int64) (Plan, error) {
	if m == nil {
		return Plan{}, &LayoutError{Reason: "no manifest"}
	}
	switch m.MediaType {
	case "", types.OCIManifestSchema1, types.DockerManifestSchema2:
	default:
		return Plan{}, &LayoutError{Reason: fmt.Sprintf("manifest media type %s is not an image manifest", m.MediaType)}
	}
	var wasm []int
	for i, l := range m.Layers {
		switch l.MediaType {
		case MediaTypeWasmLayer, MediaTypeWasmToOCILayer, MediaTypeIstioLayer:
			wasm = append(wasm, i)
		}
	}
	var p Plan
	switch {
	case len(wasm) > 1:
		return Plan{}, &LayoutError{Reason: fmt.Sprintf("%d wasm layers; a module has exactly one", len(wasm))}
	case len(wasm) == 1:
		p.Layer = m.Layers[wasm[0]]
		switch p.Layer.MediaType {
		case MediaTypeWasmLayer:
			p.Layout = LayoutCNCF
		case MediaTypeWasmToOCILayer:
			p.Layout = LayoutWasmToOCI
		default:
			p.Layout = LayoutIstio
		}
	case len(m.Layers) == 1 && isTarLayer(m.Layers[0].MediaType) && !isWasmConfig(m.Config.MediaType):
		p = Plan{Layout: LayoutIstioCompat, Layer: m.Layers[0], Tar: true}
	case len(m.Layers) == 0:
		return Plan{}, &LayoutError{Reason: "manifest has no layers"}
	default:
		mts := make([]string, len(m.Layers))
		for i, l := range m.Layers {
			mts[i] = string(l.MediaType)
		}
		return Plan{}, &LayoutError{Reason: fmt.Sprintf("no wasm layer (layer media types: %s; want %s, %s, %s, or one tar layer holding %s)",
			strings.Join(mts, ", "), MediaTypeWasmLayer, MediaTypeWasmToOCILayer, MediaTypeIstioLayer, IstioCompatFile)}
	}
	if len(p.Layer.URLs) > 0 {
		// A foreign layer would be fetched from wherever its URLs say, not the registry named.
		return Plan{}, &LayoutError{Reason: fmt.Sprintf("layer %s names foreign URLs", p.Layer.Digest)}
	}
	if p.Layer.Digest.Algorithm != "sha256" {
		return Plan{}, &LayoutError{Reason: fmt.Sprintf("layer digest %q: only sha256 is accepted", p.Layer.Digest)}
	}
	if p.Layer.Size <= 0 {
		return Plan{}, &LayoutError{Reason: fmt.Sprintf("layer %s declares size %d", p.Layer.Digest, p.Layer.Size)}
	}
	if p.Layer.Size > maxModule {
		return Plan{}, &TooLargeError{What: "module layer " + p.Layer.Digest.String(), Size: p.Layer.Size, Limit: maxModule}
	}
	return p, nil
}

func isTarLayer(mt types.MediaType) bool {
	switch mt {
	case types.DockerLayer, types.DockerUncompressedLayer, types.OCILayer, types.OCIUncompressedLayer, types.OCILayerZStd:
		return true
	}
	return false
}

func isWasmConfig(mt types.MediaType) bool {
	switch mt {
	case MediaTypeWasmConfig, MediaTypeWasmToOCIConfig, MediaTypeIstioConfig:
		return true
	}
	return false
}
