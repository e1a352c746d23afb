package wasmoci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// OCI annotation keys that Push writes.
const (
	AnnotationTitle   = "org.opencontainers.image.title"
	AnnotationCreated = "org.opencontainers.image.created"
)

// PushOptions configure Push.
type PushOptions struct {
	Keychain  authn.Keychain
	Insecure  []string
	Transport http.RoundTripper
	// Layout: LayoutCNCF when empty. The others exist to check that pulls read them.
	Layout Layout
	// Title is the module's file name (org.opencontainers.image.title).
	Title string
	// Created, when set, is written in the config and org.opencontainers.image.created; a
	// module pushed twice with the same Created has the same digest.
	Created time.Time
	// Annotations are added to the manifest's.
	Annotations map[string]string
}

// Push writes wasm to ref in o.Layout and returns the manifest by digest.
func Push(ctx context.Context, wasm []byte, ref string, o PushOptions) (name.Digest, error) {
	fail := func(err error) (name.Digest, error) { return name.Digest{}, &FetchError{Ref: ref, Err: err} }
	if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		return fail(fmt.Errorf("not a WebAssembly module (no \\0asm header)"))
	}
	c := newClient(o.Keychain, o.Insecure, o.Transport, 0)
	r, err := c.ParseReference(ref)
	if err != nil {
		return fail(err)
	}
	mf, config, layer, err := buildManifest(wasm, o)
	if err != nil {
		return fail(err)
	}
	opts := c.remoteOptions(ctx)
	repo := r.Context()
	for _, l := range []v1.Layer{config, layer} {
		if err := remote.WriteLayer(repo, l, opts...); err != nil {
			return fail(err)
		}
	}
	raw, err := json.Marshal(mf)
	if err != nil {
		return fail(err)
	}
	if err := remote.Put(r, rawManifest{raw: raw, mt: mf.MediaType}, opts...); err != nil {
		return fail(err)
	}
	return repo.Digest("sha256:" + sha256Hex(raw)), nil
}

type rawManifest struct {
	raw []byte
	mt  types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mt, nil }

// buildManifest lays wasm out as o.Layout says.
func buildManifest(wasm []byte, o PushOptions) (*v1.Manifest, v1.Layer, v1.Layer, error) {
	layout := o.Layout
	if layout == "" {
		layout = LayoutCNCF
	}
	created := ""
	if !o.Created.IsZero() {
		created = o.Created.UTC().Format(time.RFC3339)
	}
	var (
		configMT, layerMT types.MediaType
		body              = wasm
		config            = map[string]any{}
	)
	switch layout {
	case LayoutCNCF:
		configMT, layerMT = MediaTypeWasmConfig, MediaTypeWasmLayer
		config["architecture"], config["os"] = "wasm", "wasip1"
		config["layerDigests"] = []string{"sha256:" + sha256Hex(wasm)}
	case LayoutWasmToOCI:
		configMT, layerMT = MediaTypeWasmToOCIConfig, MediaTypeWasmToOCILayer
	case LayoutIstio:
		configMT, layerMT = MediaTypeIstioConfig, MediaTypeIstioLayer
	case LayoutIstioCompat:
		tgz, diffID, err := tarGz(wasm)
		if err != nil {
			return nil, nil, nil, err
		}
		configMT, layerMT, body = types.OCIConfigJSON, types.OCILayer, tgz
		config["architecture"], config["os"] = "wasm", "wasip1"
		config["rootfs"] = map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + diffID}}
	default:
		return nil, nil, nil, fmt.Errorf("layout %q: want %s, %s, %s or %s", layout, LayoutCNCF, LayoutWasmToOCI, LayoutIstio, LayoutIstioCompat)
	}
	if created != "" {
		config["created"] = created
	}
	cb, err := json.Marshal(config)
	if err != nil {
		return nil, nil, nil, err
	}
	cl, ll := static.NewLayer(cb, configMT), static.NewLayer(body, layerMT)
	cd, err := partialDescriptor(cl)
	if err != nil {
		return nil, nil, nil, err
	}
	ld, err := partialDescriptor(ll)
	if err != nil {
		return nil, nil, nil, err
	}
	if o.Title != "" {
		ld.Annotations = map[string]string{AnnotationTitle: o.Title}
	}
	ann := map[string]string{}
	if o.Title != "" {
		ann[AnnotationTitle] = o.Title
	}
	if created != "" {
		ann[AnnotationCreated] = created
	}
	for k, v := range o.Annotations {
		ann[k] = v
	}
	if len(ann) == 0 {
		ann = nil
	}
	mf := &v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, Config: cd, Layers: []v1.Descriptor{ld}, Annotations: ann}
	return mf, cl, ll, nil
}

func partialDescriptor(l v1.Layer) (v1.Descriptor, error) {
	d, err := l.Digest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	n, err := l.Size()
	if err != nil {
		return v1.Descriptor{}, err
	}
	mt, err := l.MediaType()
	if err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: mt, Size: n, Digest: d}, nil
}

// tarGz packs wasm as IstioCompatFile; it returns the gzipped tar and the tar's sha256.
func tarGz(wasm []byte) ([]byte, string, error) {
	var t bytes.Buffer
	tw := tar.NewWriter(&t)
	if err := tw.WriteHeader(&tar.Header{Name: IstioCompatFile, Mode: 0o644, Size: int64(len(wasm)), Typeflag: tar.TypeReg}); err != nil {
		return nil, "", err
	}
	if _, err := tw.Write(wasm); err != nil {
		return nil, "", err
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(t.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return z.Bytes(), sha256Hex(t.Bytes()), nil
}
