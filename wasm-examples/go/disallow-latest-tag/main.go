// Command disallow-latest-tag is a wasmkube validating admission policy: a pod whose
// containers (init, app or ephemeral) use an image without a tag or with the tag latest is
// refused, because what such an image runs changes whenever someone pushes. An image
// pinned by digest (busybox@sha256:...) is allowed whatever its tag. It reads only the
// request's kind and the pod's images, through accessors that need no JSON parsing; the C
// version in wasm-examples/c/disallow-latest-tag gives the same verdicts.
//
// The example config runs it with validationActions [Warn]: kubectl then prints the
// denial as a warning and the pod is admitted.
package main

import (
	"slices"
	"strings"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/validate"
)

func init() { validate.Register(Validate) }

// Validate refuses a pod with a floating image. Other kinds, and pods on DELETE or
// CONNECT, are allowed.
func Validate(req sdk.Request) sdk.Status {
	if req.Kind() != "Pod" {
		return sdk.OK()
	}
	if op := req.Operation(); op != sdk.Create && op != sdk.Update {
		return sdk.OK()
	}
	if msg := Message(Floating(req.PodImages())); msg != "" {
		return sdk.Deny(msg)
	}
	return sdk.OK()
}

// Floating returns the images that have no tag or the tag latest and no digest, each once,
// in order.
func Floating(images []string) []string {
	var out []string
	for _, img := range images {
		if IsFloating(img) && !slices.Contains(out, img) {
			out = append(out, img)
		}
	}
	return out
}

// IsFloating reports whether an image reference names no fixed content: no digest, and no
// tag or the tag latest. A registry's port (localhost:5000/app) is not a tag: the tag is
// after the last colon of the last path component.
func IsFloating(image string) bool {
	if strings.Contains(image, "@") {
		return false
	}
	name := image[strings.LastIndexByte(image, '/')+1:]
	i := strings.LastIndexByte(name, ':')
	return i < 0 || name[i+1:] == "latest"
}

// Message is the denial for the floating images ("" when there are none).
func Message(floating []string) string {
	switch len(floating) {
	case 0:
		return ""
	case 1:
		return "image " + floating[0] + " has no tag or the tag latest: pin a version or a digest"
	}
	return "images " + strings.Join(floating, ", ") + " have no tag or the tag latest: pin a version or a digest"
}

func main() {}
