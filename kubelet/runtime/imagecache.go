package runtime

import (
	"context"
	"slices"
	"sync"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/opencontainers/image-spec/identity"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// imageCache keeps what a container start reads from an image, by image digest (an image's
// content never changes under its digest). Without it, each container start read the
// manifest and config from containerd's content store four times, asked containerd for its
// snapshotter's capabilities, and mounted the container's root file system in the kubelet to
// read the image's /etc/group (oci.WithImageConfig's supplementary groups): about fifteen
// round trips and an overlay mount per container.
type imageCache struct {
	mu     sync.Mutex
	images map[string]*imageInfo
}

type imageInfo struct {
	config  ocispec.Image
	chainID string // the snapshot a container's writable layer is prepared on
	// process is what oci.WithImageConfig made of a default spec's process for this image
	// (env, args, cwd, user with supplementary groups), recorded on its first use.
	process *specs.Process
}

func (c *imageCache) get(ctx context.Context, img client.Image) (*imageInfo, error) {
	key := img.Target().Digest.String()
	c.mu.Lock()
	info := c.images[key]
	c.mu.Unlock()
	if info != nil {
		return info, nil
	}
	config, err := img.Spec(ctx)
	if err != nil {
		return nil, err
	}
	diffIDs, err := img.RootFS(ctx)
	if err != nil {
		return nil, err
	}
	info = &imageInfo{config: config, chainID: identity.ChainID(diffIDs).String()}
	c.mu.Lock()
	if c.images == nil {
		c.images = map[string]*imageInfo{}
	}
	if cur := c.images[key]; cur != nil {
		info = cur
	} else {
		c.images[key] = info
	}
	c.mu.Unlock()
	return info, nil
}

// withSnapshot prepares the container's writable snapshot on the image's layers, as
// client.WithNewSnapshot does, from the cached chain id.
func withSnapshot(id string, img client.Image, info *imageInfo) client.NewContainerOpts {
	return func(ctx context.Context, cl *client.Client, c *containers.Container) error {
		if _, err := cl.SnapshotService(c.Snapshotter).Prepare(ctx, id, info.chainID); err != nil {
			return err
		}
		c.SnapshotKey, c.Image = id, img.Name()
		return nil
	}
}

// withImageConfig is oci.WithImageConfig, replayed from the first container of the image
// on: the result depends only on the image and the default spec it is applied to, which is
// the first option of every spec the runtime builds.
func (c *imageCache) withImageConfig(img client.Image, info *imageInfo) oci.SpecOpts {
	return func(ctx context.Context, cl oci.Client, ctr *containers.Container, s *oci.Spec) error {
		c.mu.Lock()
		p := info.process
		c.mu.Unlock()
		if p == nil {
			if err := oci.WithImageConfig(img)(ctx, cl, ctr, s); err != nil {
				return err
			}
			c.mu.Lock()
			info.process = copyProcess(s.Process)
			c.mu.Unlock()
			return nil
		}
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		s.Process.Env, s.Process.Args, s.Process.Cwd = slices.Clone(p.Env), slices.Clone(p.Args), p.Cwd
		s.Process.User = p.User
		s.Process.User.AdditionalGids = slices.Clone(p.User.AdditionalGids)
		return nil
	}
}

func copyProcess(p *specs.Process) *specs.Process {
	out := &specs.Process{Env: slices.Clone(p.Env), Args: slices.Clone(p.Args), Cwd: p.Cwd, User: p.User}
	out.User.AdditionalGids = slices.Clone(p.User.AdditionalGids)
	return out
}
