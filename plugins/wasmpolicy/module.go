package wasmpolicy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
	"github.com/wasmkube/wasmkube/plugins/wasmoci"
)

// FetchError: a policy's module could not be had (read, pulled, or its sha256 differs).
type FetchError struct {
	Policy string
	Err    error
}

func (e *FetchError) Error() string { return fmt.Sprintf("policy %s: module: %v", e.Policy, e.Err) }
func (e *FetchError) Unwrap() error { return e.Err }

// fetcher resolves a policy's module source to bytes: a file on this host, or an image
// through the module cache (plugins/wasmoci).
type fetcher struct {
	// opts is the cache's options (Dir, Insecure, Transport); a policy's imagePullSecrets
	// add a keychain of their own on the same directory.
	opts   wasmoci.Options
	store  *wasmoci.Store // anonymous
	client kubernetes.Interface
}

func newFetcher(opts wasmoci.Options, client kubernetes.Interface) (*fetcher, error) {
	f := &fetcher{opts: opts, client: client}
	if opts.Dir == "" {
		return f, nil // file modules only
	}
	s, err := wasmoci.Open(opts)
	if err != nil {
		return nil, err
	}
	f.store = s
	return f, nil
}

// fetch reads p's module: its file, or its image by ref (ModuleRef: the digest the
// controller resolved the tag to, the image's own digest, or the tag under pullPolicy Never).
func (f *fetcher) fetch(ctx context.Context, p *policyv1alpha1.WasmPolicy, ref string) (modulespec.Module, string, error) {
	src := p.Spec.Module
	fail := func(err error) (modulespec.Module, string, error) {
		return modulespec.Module{}, "", &FetchError{Policy: p.Name, Err: err}
	}
	if src.File != "" {
		b, err := os.ReadFile(src.File)
		if err != nil {
			return fail(err)
		}
		sum := sha256.Sum256(b)
		hexSum := hex.EncodeToString(sum[:])
		if src.SHA256 != "" && src.SHA256 != hexSum {
			return fail(&wasmoci.DigestError{What: "module file " + src.File, Want: src.SHA256, Got: hexSum})
		}
		return modulespec.Module{Path: src.File, Wasm: b}, "sha256:" + hexSum, nil
	}
	if f.store == nil {
		return fail(fmt.Errorf("image %s: this component has no module cache (modules from registries need one)", src.Image))
	}
	store := f.store
	if len(src.ImagePullSecrets) > 0 {
		s, err := f.storeWithSecrets(ctx, src.ImagePullSecrets)
		if err != nil {
			return fail(err)
		}
		store = s
	}
	m, err := store.Pull(ctx, ref, wasmoci.PullPolicy(src.PullPolicy))
	if err != nil {
		return fail(err)
	}
	if src.SHA256 != "" {
		if err := m.CheckSHA256(src.SHA256); err != nil {
			return fail(err)
		}
	}
	return modulespec.Module{Path: m.Path, Wasm: m.Wasm}, m.Digest.DigestStr(), nil
}

// storeWithSecrets is a store on the same cache whose keychain is the docker configs of
// the named Secrets (the first that names a registry wins).
func (f *fetcher) storeWithSecrets(ctx context.Context, refs []corev1.SecretReference) (*wasmoci.Store, error) {
	if f.client == nil {
		return nil, fmt.Errorf("imagePullSecrets: this component has no API client to read them")
	}
	kc, err := PullSecretsKeychain(ctx, f.client, refs)
	if err != nil {
		return nil, err
	}
	opts := f.opts
	opts.Keychain = kc
	return wasmoci.Open(opts)
}
