package runtime

import (
	"context"
	"testing"

	client "github.com/containerd/containerd/v2/client"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// countingImage is a client.Image whose config reads are counted; what the cache does not
// call is left to the embedded nil interface.
type countingImage struct {
	client.Image
	digest      digest.Digest
	specs, root int
}

func (i *countingImage) Name() string               { return "example.test/app:1" }
func (i *countingImage) Target() ocispec.Descriptor { return ocispec.Descriptor{Digest: i.digest} }
func (i *countingImage) Spec(context.Context) (ocispec.Image, error) {
	i.specs++
	return ocispec.Image{Config: ocispec.ImageConfig{Cmd: []string{"run"}}}, nil
}
func (i *countingImage) RootFS(context.Context) ([]digest.Digest, error) {
	i.root++
	return []digest.Digest{i.digest}, nil
}

// The content store is read once per image digest, not once per container.
func TestImageCacheReadsAnImageOnce(t *testing.T) {
	var c imageCache
	ctx := context.Background()
	a := &countingImage{digest: digest.FromString("a")}
	for n := 0; n < 3; n++ {
		info, err := c.get(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		if info.chainID != a.digest.String() || len(info.config.Config.Cmd) != 1 {
			t.Fatalf("cached info %+v", info)
		}
	}
	if a.specs != 1 || a.root != 1 {
		t.Errorf("image read %d (config) and %d (layers) times for three containers, want once each", a.specs, a.root)
	}
	b := &countingImage{digest: digest.FromString("b")}
	if _, err := c.get(ctx, b); err != nil {
		t.Fatal(err)
	}
	if b.specs != 1 {
		t.Errorf("another image (digest) was served from the first one's entry")
	}
}
