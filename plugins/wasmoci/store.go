// Package wasmoci pulls wasm plugin modules from OCI registries and pushes them there,
// through go-containerregistry (docs/oci.md). A Store keeps what it fetched in a
// content-addressed cache on disk, beside the directory where the wasm host keeps the
// compiled form, so that a restart or a second policy naming the same module fetches and
// compiles nothing.
//
// A reference's tag is resolved to a manifest digest once (Resolve); fetching is always by
// digest (Fetch), and every byte is checked against its sha256 before it is cached: the
// manifest against the digest asked for, the layer against the manifest's descriptor, the
// module file against its own name in the cache when it is read back.
package wasmoci

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sync/singleflight"
)

// Limits applied when Options leave them zero.
const (
	// DefaultMaxManifestBytes is the manifest size limit of the distribution registry.
	DefaultMaxManifestBytes = 4 << 20
	// DefaultMaxModuleBytes bounds one module (a Go guest is a few MB).
	DefaultMaxModuleBytes = 64 << 20
)

// PullPolicy says when a reference's tag is asked of the registry again, as a container
// image's imagePullPolicy.
type PullPolicy string

const (
	// PullAlways resolves the tag at every pull (the module is still fetched only when its
	// digest is not cached).
	PullAlways PullPolicy = "Always"
	// PullIfNotPresent uses the digest the tag last resolved to when that module is cached.
	PullIfNotPresent PullPolicy = "IfNotPresent"
	// PullNever uses the cache only.
	PullNever PullPolicy = "Never"
)

// Options configure a Store.
type Options struct {
	// Dir is the cache's root (docs/oci.md, "Cache"). Required.
	Dir string
	// Keychain gives credentials per registry (see KeychainFromDockerConfig); nil: anonymous.
	Keychain authn.Keychain
	// Insecure lists registries (host or host:port) that may be reached over plain HTTP.
	// Loopback registries may always be; every other one must have a verified certificate.
	Insecure []string
	// Transport is the HTTP transport under go-containerregistry's; nil:
	// remote.DefaultTransport (system roots, TLS verified).
	Transport http.RoundTripper
	// MaxManifestBytes and MaxModuleBytes bound what a registry may send; 0: the defaults.
	MaxManifestBytes int64
	MaxModuleBytes   int64
}

// Store fetches modules and caches them on disk. It is safe for concurrent use, also by
// several processes sharing one directory (every file is written whole and renamed).
type Store struct {
	*client
	dir   string
	opts  Options
	group singleflight.Group
}

// client is what a pull and a push share: reference parsing and go-containerregistry's
// options with wasmkube's transport policy.
type client struct {
	keychain    authn.Keychain
	insecure    map[string]bool
	transport   http.RoundTripper
	maxManifest int64
}

func newClient(keychain authn.Keychain, insecure []string, transport http.RoundTripper, maxManifest int64) *client {
	if keychain == nil {
		keychain = authn.NewMultiKeychain() // anonymous everywhere
	}
	if transport == nil {
		transport = remote.DefaultTransport
	}
	if maxManifest <= 0 {
		maxManifest = DefaultMaxManifestBytes
	}
	c := &client{keychain: keychain, insecure: map[string]bool{}, transport: transport, maxManifest: maxManifest}
	for _, r := range insecure {
		c.insecure[r] = true
	}
	return c
}

// Module is a fetched module.
type Module struct {
	// Digest is the manifest's reference by digest (REGISTRY/REPO@sha256:...).
	Digest name.Digest
	// SHA256 is the hex sha256 of the module's bytes (the name of its file in the cache).
	SHA256 string
	Layout Layout
	// Path is the module's file in the cache; Wasm its bytes.
	Path string
	Wasm []byte
}

// CheckSHA256 compares the module's bytes with want (64 hex digits, as a WasmPolicy's
// spec.module.sha256), giving a *DigestError when they differ.
func (m *Module) CheckSHA256(want string) error {
	if m.SHA256 != want {
		return &DigestError{What: "module " + m.Digest.String(), Want: want, Got: m.SHA256}
	}
	return nil
}

// Open returns a Store over opts.Dir, creating its directories.
func Open(opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("wasm module cache: no directory")
	}
	if opts.MaxManifestBytes <= 0 {
		opts.MaxManifestBytes = DefaultMaxManifestBytes
	}
	if opts.MaxModuleBytes <= 0 {
		opts.MaxModuleBytes = DefaultMaxModuleBytes
	}
	s := &Store{client: newClient(opts.Keychain, opts.Insecure, opts.Transport, opts.MaxManifestBytes), dir: opts.Dir, opts: opts}
	for _, d := range []string{s.blobDir(), s.manifestDir(), s.tagDir(), s.tmpDir(), s.CompiledDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("wasm module cache: %w", err)
		}
	}
	return s, nil
}

// CompiledDir is where the wasm host keeps the compiled form (wasmhost.Options.CacheDir).
// wazero names its files by the sha256 of the module it compiled, under a folder named by
// its version and the machine's architecture, so a module compiled once is compiled again
// only by another wazero version.
func (s *Store) CompiledDir() string { return filepath.Join(s.dir, "compiled") }

func (s *Store) blobDir() string     { return filepath.Join(s.dir, "blobs", "sha256") }
func (s *Store) manifestDir() string { return filepath.Join(s.dir, "manifests", "sha256") }
func (s *Store) tagDir() string      { return filepath.Join(s.dir, "tags") }
func (s *Store) tmpDir() string      { return filepath.Join(s.dir, "tmp") }

// ParseReference parses ref as Store does, with name.Insecure for the listed registries.
func (c *client) ParseReference(ref string) (name.Reference, error) {
	r, err := name.ParseReference(ref, name.StrictValidation)
	if err != nil {
		return nil, err
	}
	if c.insecure[r.Context().RegistryStr()] {
		return name.ParseReference(ref, name.StrictValidation, name.Insecure)
	}
	return r, nil
}

func (c *client) remoteOptions(ctx context.Context) []remote.Option {
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(c.keychain),
		remote.WithTransport(&guard{next: c.transport, insecure: c.insecure, maxManifest: c.maxManifest}),
		remote.WithUserAgent("wasmkube"),
	}
}

// Resolve asks the registry which manifest ref names (one HEAD request) and returns it by
// digest. A reference that already has a digest is returned as it is, without a request.
// Nothing is cached: Pull remembers a tag's digest once its module is.
func (s *Store) Resolve(ctx context.Context, ref string) (name.Digest, error) {
	return s.client.resolve(ctx, ref)
}

// Resolver resolves tags to manifest digests and fetches nothing: the one place a
// WasmPolicy's tag is resolved (the wasmpolicy controller), while every component fetches
// by the digest it recorded.
type Resolver struct{ *client }

// NewResolver returns a Resolver with opts' Keychain, Insecure, Transport and
// MaxManifestBytes (Dir and MaxModuleBytes are not used).
func NewResolver(opts Options) *Resolver {
	return &Resolver{newClient(opts.Keychain, opts.Insecure, opts.Transport, opts.MaxManifestBytes)}
}

// Resolve is Store.Resolve: one HEAD of ref's manifest, none for a reference by digest.
func (r *Resolver) Resolve(ctx context.Context, ref string) (name.Digest, error) {
	return r.client.resolve(ctx, ref)
}

func (c *client) resolve(ctx context.Context, ref string) (name.Digest, error) {
	fail := func(err error) (name.Digest, error) { return name.Digest{}, &FetchError{Ref: ref, Err: err} }
	r, err := c.ParseReference(ref)
	if err != nil {
		return fail(err)
	}
	if d, ok := r.(name.Digest); ok {
		return d, nil
	}
	desc, err := remote.Head(r, c.remoteOptions(ctx)...)
	if err != nil {
		return fail(err)
	}
	if desc.Size > c.maxManifest {
		return fail(&TooLargeError{What: "manifest " + desc.Digest.String(), Size: desc.Size, Limit: c.maxManifest})
	}
	return r.Context().Digest(desc.Digest.String()), nil
}

// Pull resolves ref as policy says and fetches its module.
func (s *Store) Pull(ctx context.Context, ref string, policy PullPolicy) (*Module, error) {
	r, err := s.ParseReference(ref)
	if err != nil {
		return nil, &FetchError{Ref: ref, Err: err}
	}
	d, isDigest := r.(name.Digest)
	if !isDigest && policy != PullAlways {
		var e tagEntry
		if readJSON(filepath.Join(s.tagDir(), tagFile(r)), &e) == nil && e.Ref == r.Name() {
			if m, err := s.cached(r.Context().Digest(e.Digest)); err == nil {
				return m, nil
			}
		}
	}
	if policy == PullNever {
		if isDigest {
			if m, err := s.cached(d); err == nil {
				return m, nil
			}
		}
		return nil, &FetchError{Ref: ref, Err: NotCachedError{}}
	}
	if isDigest {
		return s.Fetch(ctx, d)
	}
	if d, err = s.Resolve(ctx, ref); err != nil {
		return nil, err
	}
	m, err := s.Fetch(ctx, d)
	var fe *FetchError
	if errors.As(err, &fe) {
		// Name the tag the user wrote as well as the digest it stood for.
		return nil, &FetchError{Ref: r.Name() + "@" + d.DigestStr(), Err: fe.Err}
	}
	if err != nil {
		return nil, err
	}
	// Remembered for IfNotPresent only once its module is cached.
	if err := writeJSON(s, filepath.Join(s.tagDir(), tagFile(r)), tagEntry{Ref: r.Name(), Digest: d.DigestStr()}); err != nil {
		return nil, &FetchError{Ref: ref, Err: err}
	}
	return m, nil
}

// Fetch returns the module of the manifest d: from the cache, or fetched, verified and
// cached. Concurrent fetches of one digest fetch once. Nothing is cached unless every check
// passed.
func (s *Store) Fetch(ctx context.Context, d name.Digest) (*Module, error) {
	if m, err := s.cached(d); err == nil {
		return m, nil
	}
	v, err, _ := s.group.Do(d.DigestStr(), func() (any, error) {
		if m, err := s.cached(d); err == nil {
			return m, nil
		}
		return s.fetch(ctx, d)
	})
	if err != nil {
		return nil, &FetchError{Ref: d.String(), Err: err}
	}
	m := *v.(*Module)
	m.Digest = d // the same manifest may have been fetched through another repository
	return &m, nil
}

type manifestEntry struct {
	Module string `json:"module"` // hex sha256 of the module bytes
	Layout Layout `json:"layout"`
}

type tagEntry struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
}

func tagFile(r name.Reference) string {
	sum := sha256.Sum256([]byte(r.Name()))
	return hex.EncodeToString(sum[:])
}

// cached reads d's module from the cache, checking the bytes against their name.
func (s *Store) cached(d name.Digest) (*Module, error) {
	h, err := v1.NewHash(d.DigestStr())
	if err != nil {
		return nil, err
	}
	var e manifestEntry
	if err := readJSON(filepath.Join(s.manifestDir(), h.Hex), &e); err != nil {
		return nil, err
	}
	path := filepath.Join(s.blobDir(), e.Module)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if got := sha256Hex(b); got != e.Module {
		// Damaged on disk: forget it, so the caller fetches it anew.
		_ = os.Remove(path)
		return nil, &DigestError{What: "cached module " + path, Want: e.Module, Got: got}
	}
	return &Module{Digest: d, SHA256: e.Module, Layout: e.Layout, Path: path, Wasm: b}, nil
}

// fetch gets d's manifest and module layer, checks both and caches the module.
func (s *Store) fetch(ctx context.Context, d name.Digest) (*Module, error) {
	// go-containerregistry checks a manifest fetched by digest against that digest.
	desc, err := remote.Get(d, s.remoteOptions(ctx)...)
	if err != nil {
		return nil, err
	}
	if n := int64(len(desc.Manifest)); n > s.opts.MaxManifestBytes {
		return nil, &TooLargeError{What: "manifest", Size: n, Limit: s.opts.MaxManifestBytes}
	}
	if got := sha256Hex(desc.Manifest); "sha256:"+got != d.DigestStr() {
		return nil, &DigestError{What: "manifest", Want: d.DigestStr(), Got: "sha256:" + got}
	}
	mf, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	plan, err := PlanFetch(mf, s.opts.MaxModuleBytes)
	if err != nil {
		return nil, err
	}
	img, err := desc.Image()
	if err != nil {
		return nil, err
	}
	layer, err := img.LayerByDigest(plan.Layer.Digest)
	if err != nil {
		return nil, err
	}
	rc, err := layer.Compressed() // checked against the descriptor's size and digest at EOF
	if err != nil {
		return nil, err
	}
	blob, err := io.ReadAll(io.LimitReader(rc, plan.Layer.Size+1))
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("layer %s: %w", plan.Layer.Digest, err)
	}
	if int64(len(blob)) != plan.Layer.Size {
		return nil, fmt.Errorf("layer %s: got %d bytes, the manifest says %d", plan.Layer.Digest, len(blob), plan.Layer.Size)
	}
	if got := "sha256:" + sha256Hex(blob); got != plan.Layer.Digest.String() {
		return nil, &DigestError{What: "layer", Want: plan.Layer.Digest.String(), Got: got}
	}
	wasm := blob
	if plan.Tar {
		if wasm, err = fromTar(blob, s.opts.MaxModuleBytes); err != nil {
			return nil, fmt.Errorf("layer %s: %w", plan.Layer.Digest, err)
		}
	}
	if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		return nil, &LayoutError{Reason: fmt.Sprintf("layer %s is not a WebAssembly module (no \\0asm header)", plan.Layer.Digest)}
	}
	sum := sha256Hex(wasm)
	path := filepath.Join(s.blobDir(), sum)
	// The module first, then the manifest's entry that names it: a crash between the two
	// leaves an unreferenced file, never an entry without its module.
	if err := writeFile(s, path, wasm); err != nil {
		return nil, err
	}
	if err := writeJSON(s, filepath.Join(s.manifestDir(), d.DigestStr()[len("sha256:"):]), manifestEntry{Module: sum, Layout: plan.Layout}); err != nil {
		return nil, err
	}
	return &Module{Digest: d, SHA256: sum, Layout: plan.Layout, Path: path, Wasm: wasm}, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// writeFile writes b to path whole: into the cache's tmp folder, then renamed.
func writeFile(s *Store, path string, b []byte) error {
	f, err := os.CreateTemp(s.tmpDir(), filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("wasm module cache: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("wasm module cache: %w", err)
	}
	return nil
}

func writeJSON(s *Store, path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFile(s, path, b)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
