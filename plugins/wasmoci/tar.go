package wasmoci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
)

// fromTar reads IstioCompatFile out of a layer of Istio's compat layout (a tar, gzipped or
// not), reading no more than limit bytes of it.
func fromTar(layer []byte, limit int64) ([]byte, error) {
	var r io.Reader = bytes.NewReader(layer)
	if bytes.HasPrefix(layer, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, &LayoutError{Reason: "the layer's tar holds no " + IstioCompatFile}
		}
		if err != nil {
			return nil, fmt.Errorf("tar: %w", err)
		}
		if path.Clean("/"+h.Name) != "/"+IstioCompatFile || h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size > limit {
			return nil, &TooLargeError{What: IstioCompatFile, Size: h.Size, Limit: limit}
		}
		return io.ReadAll(io.LimitReader(tr, h.Size))
	}
}
