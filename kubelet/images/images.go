// Package images builds the small OCI images the kubelet needs offline (busybox and pause)
// and imports OCI archives into containerd.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/platforms"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Names of the images the project builds (`make images`).
const (
	BusyboxRef = "wasmkube.local/busybox:latest"
	PauseRef   = "wasmkube.local/pause:latest"
	// WebhookServerRef is the example admission webhook (examples/webhook-server).
	WebhookServerRef = "wasmkube.local/webhook-server:latest"
)

// Entry is one file system entry of an image layer.
type Entry struct {
	Path     string // relative, e.g. "bin/sh"
	Mode     int64  // permission bits
	Dir      bool
	Linkname string // non-empty for a symlink
	Data     []byte // file content
}

// LayerTar renders entries as an uncompressed tar stream with fixed timestamps, so the same
// input always gives the same digest.
func LayerTar(entries []Entry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, e := range entries {
		h := &tar.Header{Name: e.Path, Mode: e.Mode, ModTime: epoch, Format: tar.FormatPAX}
		switch {
		case e.Dir:
			h.Typeflag, h.Name = tar.TypeDir, e.Path+"/"
		case e.Linkname != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.Linkname
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", e.Path, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.Data); err != nil {
				return nil, fmt.Errorf("layer entry %s: %w", e.Path, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// mountPoints are the paths every container gets a mount on (/proc, /sys, /dev, /run and
// the pod's /etc/hosts, /etc/hostname, /etc/resolv.conf). Shipped in the image, runc finds
// them instead of creating them in the container's writable layer, which spares each
// container start a copy-up of /etc and seven inode allocations on the snapshotter's disk.
var mountPoints = []Entry{
	{Path: "dev", Dir: true, Mode: 0o755},
	{Path: "etc", Dir: true, Mode: 0o755},
	{Path: "etc/hostname", Mode: 0o644},
	{Path: "etc/hosts", Mode: 0o644},
	{Path: "etc/resolv.conf", Mode: 0o644},
	{Path: "proc", Dir: true, Mode: 0o555},
	{Path: "run", Dir: true, Mode: 0o755},
	{Path: "sys", Dir: true, Mode: 0o555},
}

// PauseEntries lays out the pause binary at /pause, with the mount points.
func PauseEntries(pause []byte) []Entry { return BinaryEntries("pause", pause) }

// BinaryEntries lays out one static binary at /name, with the mount points: the image of
// a program that needs nothing else (pause, the example webhook server).
func BinaryEntries(name string, bin []byte) []Entry {
	return append(append([]Entry(nil), mountPoints...), Entry{Path: name, Mode: 0o755, Data: bin})
}

// BusyboxEntries lays out a busybox-static binary with one symlink per applet, plus the
// minimal /etc files programs expect and the mount points.
func BusyboxEntries(busybox []byte, applets []string) []Entry {
	es := append(append([]Entry(nil), mountPoints...),
		Entry{Path: "bin", Dir: true, Mode: 0o755},
		Entry{Path: "bin/busybox", Mode: 0o755, Data: busybox},
		Entry{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		Entry{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		Entry{Path: "root", Dir: true, Mode: 0o700},
		Entry{Path: "tmp", Dir: true, Mode: 0o1777},
		Entry{Path: "usr", Dir: true, Mode: 0o755},
		Entry{Path: "usr/bin", Dir: true, Mode: 0o755},
		Entry{Path: "var", Dir: true, Mode: 0o755},
	)
	sorted := append([]string(nil), applets...)
	sort.Strings(sorted)
	seen := map[string]bool{"busybox": true}
	for _, a := range sorted {
		if a == "" || seen[a] || filepath.Base(a) != a {
			continue
		}
		seen[a] = true
		es = append(es, Entry{Path: "bin/" + a, Mode: 0o777, Linkname: "busybox"})
	}
	return es
}

// BuildImage makes a one-layer linux image of entries with the given entrypoint and cmd.
func BuildImage(entries []Entry, entrypoint, cmd []string) (v1.Image, error) {
	layerTar, err := LayerTar(entries)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint, cf.Config.Cmd = entrypoint, cmd
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cf.Config.WorkingDir = "/"
	cf.Created = v1.Time{Time: time.Unix(0, 0)}
	return mutate.ConfigFile(img, cf)
}

// BuildArchive writes an OCI image archive (oci-layout, index.json, blobs) holding one image
// named ref, with one layer made of entries and the given command, to w. `ctr import` and
// Import both read it.
func BuildArchive(w io.Writer, ref string, entries []Entry, entrypoint, cmd []string) error {
	img, err := BuildImage(entries, entrypoint, cmd)
	if err != nil {
		return fmt.Errorf("image %s: %w", ref, err)
	}
	return WriteArchive(w, ref, img)
}

// WriteArchive writes img, named ref, as an OCI image archive to w.
func WriteArchive(w io.Writer, ref string, img v1.Image) error {
	dir, err := os.MkdirTemp("", "wasmkube-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		images.AnnotationImageName: ref,
		ocispec.AnnotationRefName:  ref,
	}), layout.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH})); err != nil {
		return fmt.Errorf("image %s: write layout: %w", ref, err)
	}
	return tarDir(w, dir)
}

func tarDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if rel == "." {
			return nil
		}
		h, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			h.Name += "/"
		}
		h.ModTime = time.Unix(0, 0)
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// Import reads an OCI (or Docker) image archive into containerd in the namespace carried by
// ctx, unpacks it for snapshotter, and returns the names of the images it held.
func Import(ctx context.Context, c *client.Client, r io.Reader, snapshotter string) ([]string, error) {
	imgs, err := c.Import(ctx, r, client.WithImportPlatform(platforms.Default()))
	if err != nil {
		return nil, fmt.Errorf("import image archive: %w", err)
	}
	var names []string
	for _, im := range imgs {
		img := client.NewImageWithPlatform(c, im, platforms.Default())
		if err := img.Unpack(ctx, snapshotter); err != nil {
			return names, fmt.Errorf("unpack image %s: %w", im.Name, err)
		}
		names = append(names, im.Name)
	}
	return names, nil
}

// ImportFile is Import for an archive on disk.
func ImportFile(ctx context.Context, c *client.Client, path, snapshotter string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("image archive: %w", err)
	}
	defer f.Close()
	names, err := Import(ctx, c, f, snapshotter)
	if err != nil {
		return names, fmt.Errorf("%s: %w", path, err)
	}
	return names, nil
}

// ArchiveRefs lists the image names an OCI archive declares in its index.json.
func ArchiveRefs(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("%s: no index.json: not an OCI archive", path)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if strings.TrimPrefix(h.Name, "./") != "index.json" {
			continue
		}
		var idx ocispec.Index
		if err := json.NewDecoder(tr).Decode(&idx); err != nil {
			return nil, fmt.Errorf("%s: index.json: %w", path, err)
		}
		var refs []string
		for _, m := range idx.Manifests {
			if n := m.Annotations[images.AnnotationImageName]; n != "" {
				refs = append(refs, n)
			} else if n := m.Annotations[ocispec.AnnotationRefName]; n != "" {
				refs = append(refs, n)
			}
		}
		return refs, nil
	}
}
