package wasmoci_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmoci"
)

// testRegistry is go-containerregistry's registry on loopback with blobs on disk, with a
// log of the requests it saw and an optional lie told in place of the real answer.
type testRegistry struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []string
	// lie, when set, answers a request instead of the registry when it returns true.
	lie func(w http.ResponseWriter, r *http.Request, real http.Handler) bool
}

func newRegistry(t *testing.T) *testRegistry {
	t.Helper()
	h, err := wasmoci.NewRegistry(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := &testRegistry{}
	tr.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.mu.Lock()
		tr.reqs = append(tr.reqs, r.Method+" "+r.URL.Path)
		lie := tr.lie
		tr.mu.Unlock()
		if lie != nil && lie(w, r, h) {
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(tr.Close)
	return tr
}

func (tr *testRegistry) host() string { return strings.TrimPrefix(tr.URL, "http://") }

// take returns the requests seen since the last take.
func (tr *testRegistry) take() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	r := tr.reqs
	tr.reqs = nil
	return r
}

func (tr *testRegistry) setLie(f func(w http.ResponseWriter, r *http.Request, real http.Handler) bool) {
	tr.mu.Lock()
	tr.lie = f
	tr.mu.Unlock()
}

func openStore(t *testing.T, dir string) *wasmoci.Store {
	t.Helper()
	s, err := wasmoci.Open(wasmoci.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testModule(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(wasmbuild.WAT(t, "wasm-examples/wat/drain-filter/drain-filter.wat"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func push(t *testing.T, wasm []byte, ref string, layout wasmoci.Layout) name.Digest {
	t.Helper()
	d, err := wasmoci.Push(context.Background(), wasm, ref, wasmoci.PushOptions{Layout: layout, Title: "drain-filter.wasm", Created: time.Unix(1700000000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestPushThenPullEachLayout(t *testing.T) {
	reg := newRegistry(t)
	wasm := testModule(t)
	for _, layout := range []wasmoci.Layout{wasmoci.LayoutCNCF, wasmoci.LayoutWasmToOCI, wasmoci.LayoutIstio, wasmoci.LayoutIstioCompat} {
		t.Run(string(layout), func(t *testing.T) {
			ref := reg.host() + "/policies/drain:" + string(layout)
			d := push(t, wasm, ref, layout)
			if !strings.HasPrefix(d.String(), reg.host()+"/policies/drain@sha256:") {
				t.Fatalf("push returned %s", d)
			}
			m, err := openStore(t, t.TempDir()).Pull(context.Background(), ref, wasmoci.PullIfNotPresent)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(m.Wasm, wasm) || m.Layout != layout || m.Digest.DigestStr() != d.DigestStr() {
				t.Fatalf("pulled layout %s digest %s (%d bytes), want %s %s (%d bytes)", m.Layout, m.Digest, len(m.Wasm), layout, d, len(wasm))
			}
			if b, err := os.ReadFile(m.Path); err != nil || !bytes.Equal(b, wasm) {
				t.Fatalf("cached file %s: %v", m.Path, err)
			}
			var de *wasmoci.DigestError
			if err := m.CheckSHA256(sha256Hex(wasm)); err != nil {
				t.Fatal(err)
			}
			if err := m.CheckSHA256(strings.Repeat("0", 64)); !errors.As(err, &de) {
				t.Fatalf("CheckSHA256 of other bytes: %v", err)
			}
		})
	}
}

// The layout Push writes is the CNCF one, field by field.
func TestPushWritesCNCFLayout(t *testing.T) {
	reg := newRegistry(t)
	wasm := testModule(t)
	ref := reg.host() + "/policies/drain:v1"
	d := push(t, wasm, ref, "")
	desc, err := remote.Get(d)
	if err != nil {
		t.Fatal(err)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != "application/vnd.wasm.config.v0+json" ||
		len(m.Layers) != 1 || m.Layers[0].MediaType != "application/wasm" || m.Layers[0].Size != int64(len(wasm)) {
		t.Fatalf("manifest %s", desc.Manifest)
	}
	if m.Annotations["org.opencontainers.image.title"] != "drain-filter.wasm" || m.Annotations["org.opencontainers.image.created"] != "2023-11-14T22:13:20Z" {
		t.Fatalf("annotations %v", m.Annotations)
	}
	// Same bytes, same time: same digest.
	if d2 := push(t, wasm, reg.host()+"/policies/drain:v2", ""); d2.DigestStr() != d.DigestStr() {
		t.Fatalf("second push %s, first %s", d2, d)
	}
}

func TestSecondPullFetchesNothing(t *testing.T) {
	reg := newRegistry(t)
	ref := reg.host() + "/policies/drain:v1"
	d := push(t, testModule(t), ref, "")
	dir := t.TempDir()
	s := openStore(t, dir)
	ctx := context.Background()
	reg.take()
	if _, err := s.Pull(ctx, ref, wasmoci.PullIfNotPresent); err != nil {
		t.Fatal(err)
	}
	if got := reg.take(); len(got) == 0 {
		t.Fatal("first pull made no request")
	}
	// A second policy naming the digest, the tag, or the same store reopened after a restart.
	if _, err := s.Fetch(ctx, d); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pull(ctx, ref, wasmoci.PullIfNotPresent); err != nil {
		t.Fatal(err)
	}
	if _, err := openStore(t, dir).Pull(ctx, d.String(), wasmoci.PullNever); err != nil {
		t.Fatal(err)
	}
	if got := reg.take(); len(got) != 0 {
		t.Fatalf("pulls of a cached module made requests: %v", got)
	}
	// Always asks which manifest the tag names, and fetches nothing more.
	if _, err := s.Pull(ctx, ref, wasmoci.PullAlways); err != nil {
		t.Fatal(err)
	}
	for _, r := range reg.take() {
		if !strings.HasPrefix(r, "HEAD /v2/policies/drain/manifests/v1") && r != "GET /v2/" {
			t.Fatalf("pull Always of a cached module: %s", r)
		}
	}
	// Concurrent fetches of one digest fetch once.
	s2 := openStore(t, t.TempDir())
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s2.Fetch(ctx, d); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	blobGets := 0
	for _, r := range reg.take() {
		if strings.HasPrefix(r, "GET /v2/policies/drain/blobs/") {
			blobGets++
		}
	}
	if blobGets != 1 {
		t.Fatalf("4 concurrent fetches made %d blob GETs, want 1", blobGets)
	}
}

func TestLyingRegistry(t *testing.T) {
	wasm := testModule(t)
	type setup struct {
		reg    *testRegistry
		ref    string // what is pulled
		layer  string // the module layer's digest
		digest name.Digest
	}
	pushed := func(t *testing.T) setup {
		reg := newRegistry(t)
		ref := reg.host() + "/policies/drain:v1"
		d := push(t, wasm, ref, "")
		return setup{reg: reg, ref: ref, layer: "sha256:" + sha256Hex(wasm), digest: d}
	}
	// putManifest pushes a manifest with one layer of body and media type mt.
	putManifest := func(t *testing.T, reg *testRegistry, tag string, body []byte, mt types.MediaType, ann map[string]string) name.Digest {
		repo, err := name.NewRepository(reg.host() + "/policies/drain")
		if err != nil {
			t.Fatal(err)
		}
		cfg := static.NewLayer([]byte("{}"), "application/vnd.wasm.config.v0+json")
		l := static.NewLayer(body, mt)
		for _, x := range []v1.Layer{cfg, l} {
			if err := remote.WriteLayer(repo, x); err != nil {
				t.Fatal(err)
			}
		}
		desc := func(x v1.Layer) v1.Descriptor {
			d, _ := x.Digest()
			n, _ := x.Size()
			m, _ := x.MediaType()
			return v1.Descriptor{MediaType: m, Size: n, Digest: d}
		}
		m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, Config: desc(cfg), Layers: []v1.Descriptor{desc(l)}, Annotations: ann}
		img := rawImage{m}
		if err := remote.Put(repo.Tag(tag), img); err != nil {
			t.Fatal(err)
		}
		raw, _ := img.RawManifest()
		return repo.Digest("sha256:" + sha256Hex(raw))
	}
	cases := []struct {
		name string
		make func(t *testing.T) setup
		want string
		as   any
	}{
		{"blob with other bytes", func(t *testing.T) setup {
			s := pushed(t)
			s.reg.setLie(func(w http.ResponseWriter, r *http.Request, real http.Handler) bool {
				if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+s.layer) {
					return false
				}
				bad := bytes.Clone(wasm)
				bad[len(bad)-1] ^= 0xff
				w.Write(bad)
				return true
			})
			return s
		}, "sha256", nil},
		{"truncated blob", func(t *testing.T) setup {
			s := pushed(t)
			s.reg.setLie(func(w http.ResponseWriter, r *http.Request, real http.Handler) bool {
				if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+s.layer) {
					return false
				}
				w.Write(wasm[:len(wasm)/2])
				return true
			})
			return s
		}, "does not match expected size", nil},
		{"truncated blob, full length announced", func(t *testing.T) setup {
			s := pushed(t)
			s.reg.setLie(func(w http.ResponseWriter, r *http.Request, real http.Handler) bool {
				if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+s.layer) {
					return false
				}
				w.Header().Set("Content-Length", itoa(len(wasm)))
				w.Write(wasm[:len(wasm)/2])
				return true
			})
			return s
		}, "EOF", nil},
		{"manifest of another digest", func(t *testing.T) setup {
			s := pushed(t)
			other := putManifest(t, s.reg, "other", append([]byte("\x00asm\x01\x00\x00\x00"), 1), "application/wasm", nil)
			s.reg.setLie(func(w http.ResponseWriter, r *http.Request, real http.Handler) bool {
				if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/manifests/"+s.digest.DigestStr()) {
					return false
				}
				r2 := r.Clone(r.Context())
				r2.URL.Path = strings.Replace(r.URL.Path, s.digest.DigestStr(), other.DigestStr(), 1)
				real.ServeHTTP(w, r2)
				return true
			})
			return s
		}, "does not match requested digest", nil},
		{"layer of another media type", func(t *testing.T) setup {
			s := pushed(t)
			putManifest(t, s.reg, "v1", wasm, "text/plain", nil)
			return s
		}, "no wasm layer (layer media types: text/plain", new(*wasmoci.LayoutError)},
		{"wasm layer that is no module", func(t *testing.T) setup {
			s := pushed(t)
			putManifest(t, s.reg, "v1", []byte("#!/bin/sh\n"), "application/wasm", nil)
			return s
		}, "no \\0asm header", new(*wasmoci.LayoutError)},
		{"manifest too large", func(t *testing.T) setup {
			s := pushed(t)
			putManifest(t, s.reg, "v1", wasm, "application/wasm", map[string]string{"padding": strings.Repeat("x", 5<<20)})
			return s
		}, "over the limit of 4194304", new(*wasmoci.TooLargeError)},
		{"manifest too large, pulled by digest", func(t *testing.T) setup {
			s := pushed(t)
			d := putManifest(t, s.reg, "v1", wasm, "application/wasm", map[string]string{"padding": strings.Repeat("x", 5<<20)})
			s.ref = d.String()
			return s
		}, "over the limit of 4194304", new(*wasmoci.TooLargeError)},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.make(t)
			dir := t.TempDir()
			_, err := openStore(t, dir).Pull(context.Background(), s.ref, wasmoci.PullAlways)
			if err == nil {
				t.Fatal("pull succeeded")
			}
			var fe *wasmoci.FetchError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), "/policies/drain") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q: want a FetchError naming the ref and saying %q", err, tt.want)
			}
			if tt.as != nil && !errors.As(err, tt.as) {
				t.Fatalf("error %q is not a %T", err, tt.as)
			}
			for _, sub := range []string{"blobs/sha256", "manifests/sha256", "tags", "tmp"} {
				if ents, _ := os.ReadDir(filepath.Join(dir, sub)); len(ents) != 0 {
					t.Fatalf("%s holds %d files after a failed pull", sub, len(ents))
				}
			}
		})
	}
}

// A restarted component (a new Store and a new host on the same directory) fetches and
// compiles nothing: wazero's cache files are neither written nor replaced.
func TestRestartReusesCompiledForm(t *testing.T) {
	reg := newRegistry(t)
	ref := reg.host() + "/policies/drain:v1"
	d := push(t, testModule(t), ref, "")
	dir := t.TempDir()
	ctx := context.Background()
	loadOnce := func(s *wasmoci.Store, ref string) {
		t.Helper()
		m, err := s.Pull(ctx, ref, wasmoci.PullIfNotPresent)
		if err != nil {
			t.Fatal(err)
		}
		h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}, CacheDir: s.CompiledDir()})
		if err != nil {
			t.Fatal(err)
		}
		mod, err := h.Load(ctx, wasmhost.LoadOptions{Name: "drain", Path: m.Path, Wasm: m.Wasm})
		if err != nil {
			t.Fatal(err)
		}
		_ = mod.Close(ctx)
		_ = h.Close(ctx)
	}
	loadOnce(openStore(t, dir), ref)
	before := compiledFiles(t, filepath.Join(dir, "compiled"))
	if len(before) == 0 {
		t.Fatal("no compiled form on disk after the first load")
	}
	reg.take()
	loadOnce(openStore(t, dir), d.String())
	if got := reg.take(); len(got) != 0 {
		t.Fatalf("restart made requests: %v", got)
	}
	after := compiledFiles(t, filepath.Join(dir, "compiled"))
	if len(after) != len(before) {
		t.Fatalf("compiled files %d after the restart, %d before", len(after), len(before))
	}
	for p, ino := range before {
		if after[p] != ino {
			t.Fatalf("%s was written again after the restart", p)
		}
	}
}

// compiledFiles maps each file under dir to its inode (wazero writes a new file and renames it).
func compiledFiles(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		out[p] = fi.Sys().(*syscall.Stat_t).Ino
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCredentialsFromDockerConfig(t *testing.T) {
	reg := newRegistry(t)
	ref := reg.host() + "/policies/drain:v1"
	push(t, testModule(t), ref, "")
	reg.setLie(func(w http.ResponseWriter, r *http.Request, real http.Handler) bool {
		if u, p, ok := r.BasicAuth(); ok && u == "robot" && p == "s3cret" {
			return false
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="wasmkube"`)
		w.WriteHeader(http.StatusUnauthorized)
		return true
	})
	ctx := context.Background()
	if _, err := openStore(t, t.TempDir()).Pull(ctx, ref, wasmoci.PullAlways); err == nil || !strings.Contains(err.Error(), "UNAUTHORIZED") && !strings.Contains(err.Error(), "401") {
		t.Fatalf("anonymous pull: %v", err)
	}
	// robot:s3cret
	kc, err := wasmoci.KeychainFromDockerConfig([]byte(`{"auths":{"` + reg.host() + `":{"auth":"cm9ib3Q6czNjcmV0"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := wasmoci.Open(wasmoci.Options{Dir: t.TempDir(), Keychain: kc})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pull(ctx, ref, wasmoci.PullAlways); err != nil {
		t.Fatal(err)
	}
}

type rawImage struct{ m v1.Manifest }

func (r rawImage) RawManifest() ([]byte, error)        { return jsonMarshal(r.m) }
func (r rawImage) MediaType() (types.MediaType, error) { return r.m.MediaType, nil }
