// Command admitguest is an admission policy that exercises every admission part of the Go
// SDK; sdk/go/admission_test.go runs it through the real host and checks what it saw.
// Validate reports what it read as its denial message for a pod labelled "report"; the
// other labels pick a behaviour of Mutate or Validate.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/mutate"
	"github.com/wasmkube/wasmkube/sdk/go/objects"
	"github.com/wasmkube/wasmkube/sdk/go/validate"
)

func init() {
	validate.Register(check)
	mutate.Register(change)
}

func has(req sdk.Request, label string) bool { _, ok := req.ObjectLabel(label); return ok }

func check(req sdk.Request) sdk.Status {
	switch {
	case has(req, "report"):
		return sdk.Deny(report(req))
	case has(req, "skip"):
		return sdk.Skip() // not an admission code: the SDK turns it into an Error
	case has(req, "fields"):
		return sdk.DenyFields(sdk.FieldError{Path: "spec.hostNetwork", Msg: "no"}, sdk.FieldError{Path: "metadata.name", Msg: "no"})
	}
	return sdk.OK()
}

func report(req sdk.Request) string {
	var b strings.Builder
	app, _ := req.ObjectLabel("app")
	big, _ := req.ObjectAnnotation("big")
	_, missing := req.ObjectLabel("missing")
	old, oldOK := req.OldObjectLabel("app")
	oldAnn, _ := req.OldObjectAnnotation("note")
	fmt.Fprintf(&b, "op=%s kind=%s res=%s obj=%s/%s user=%s groups=%v app=%s big=%d missing=%v old=%s/%v oldnote=%s images=%v",
		req.Operation(), req.Kind(), req.Resource(), req.Namespace(), req.Name(), req.User(), req.Groups(),
		app, len(big), missing, old, oldOK, oldAnn, req.PodImages())
	fmt.Fprintf(&b, " request=%v object=%v oldobject=%v",
		bytes.Contains(req.JSON(), []byte(`"operation":"`+string(req.Operation())+`"`)),
		bytes.Contains(req.ObjectJSON(), []byte(`"kind":"Pod"`)), len(req.OldObjectJSON()))
	var pod struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	err := req.Object(&pod)
	oldErr := req.OldObject(&pod)
	fmt.Fprintf(&b, " decoded=%s/%v oldobject=%v", pod.Metadata.Name, err, errors.Is(oldErr, sdk.ErrNoObject))
	var images []struct {
		Image string `json:"image"`
	}
	err = req.ObjectField(&images, "spec", "containers")
	var oldName string
	oldErr = req.OldObjectField(&oldName, "metadata", "name")
	absent := "unchanged"
	absentErr := req.ObjectField(&absent, "metadata", "generateName")
	fmt.Fprintf(&b, " field=%d/%v oldfield=%s/%v absent=%s/%v", len(images), err, oldName, errors.Is(oldErr, sdk.ErrNoObject), absent, absentErr)

	var ns struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	err = objects.GetInto("namespaces", req.Namespace(), &ns)
	_, gone := objects.Get("namespaces", "gone")
	_, forbidden := objects.Get("configmaps", "settings")
	list, listErr := objects.List("namespaces")
	fmt.Fprintf(&b, " | ns=%v/%v gone=%v forbidden=%v list=%d/%v",
		ns.Metadata.Labels, err, errors.Is(gone, objects.ErrNotFound), errors.Is(forbidden, objects.ErrForbidden),
		bytes.Count(list, []byte(`"kind":"Namespace"`)), listErr)

	req.Warn("warned by validate")
	req.Warnf("warned %d times", 2)
	req.AuditAnnotation("seen", req.Name())
	return b.String()
}

func change(req sdk.Request, p *sdk.Patch) sdk.Status {
	switch {
	case has(req, "patch"):
		p.Test("/metadata/name", req.Name())
		p.Add(sdk.Pointer("metadata", "annotations", "example.com/by~mutate"), "admitguest")
		p.Replace("/metadata/labels/patch", "done")
	case has(req, "badvalue"):
		p.Add("/metadata/annotations/x", make(chan int))
	case has(req, "deny-after-patch"):
		p.Add("/metadata/annotations/x", "y")
		return sdk.Deny("changed my mind")
	}
	return sdk.OK()
}

func main() {}
