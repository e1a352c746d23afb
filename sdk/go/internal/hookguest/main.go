// Command hookguest is a kubelet hook plugin that exercises every kubelet part of the Go
// SDK; sdk/go/hook_test.go runs it through the real host against a loopback server and
// checks what it saw. Both entry points report what they read as their reason.
package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/prestop"
	"github.com/wasmkube/wasmkube/sdk/go/probe"
)

// args: the test server's port, and a port where nothing listens.
var args struct {
	Port   int `json:"port"`
	Closed int `json:"closed"`
}

func init() {
	sdk.OnInit(func() error { return sdk.DecodeArgs(&args) })
	probe.Register(func(pod sdk.Pod, c sdk.Container) sdk.Status {
		var r []string
		add := func(f string, a ...any) { r = append(r, fmt.Sprintf(f, a...)) }
		add("container=%s kind=%s ip=%s pod=%s/%s app=%s", c.Name(), c.ProbeKind(), pod.IP(), pod.Namespace(), pod.Name(), pod.Label("app"))
		resp, err := sdk.HTTPGet(args.Port, "/big?n=10000")
		if err != nil {
			return sdk.Errorf("GET /big: %v", err)
		}
		body := resp.Body()
		tail := body[max(len(body)-3, 0):]
		add("big=%d type=%s missing=%q len=%d tail=%s", resp.Status, resp.Header("content-type"), resp.Header("X-Missing"), len(body), tail)
		redirect, err := sdk.HTTPGet(args.Port, "/moved")
		add("moved=%d location=%s err=%v", redirect.Status, redirect.Header("Location"), err)
		add("stale=%q/%d", resp.Header("Content-Type"), len(resp.Body()))
		_, err = sdk.HTTPPost(args.Port, "/echo", []byte("x"))
		add("post=%v unavailable=%v", err, errors.Is(err, sdk.ErrUnavailable))
		_, err = sdk.HTTPGet(args.Port, "//elsewhere/x")
		add("hostpath=%v", errors.Is(err, sdk.EINVAL))
		add("tcp=%v", sdk.TCPConnect(args.Port))
		err = sdk.TCPConnect(args.Closed)
		add("closed=%v refused=%v", err != nil, errors.Is(err, sdk.ECONNREFUSED))
		add("sleep=%v", sdk.Sleep(time.Millisecond))
		return probe.Failure(strings.Join(r, " "))
	})
	prestop.Register(func(pod sdk.Pod, c sdk.Container) sdk.Status {
		var r []string
		add := func(f string, a ...any) { r = append(r, fmt.Sprintf(f, a...)) }
		add("container=%s kind=%q ip=%s", c.Name(), c.ProbeKind(), pod.IP())
		resp, err := sdk.HTTPPost(args.Port, "/echo", []byte("drain now"))
		if err != nil {
			return sdk.Errorf("POST /echo: %v", err)
		}
		add("post=%d body=%s", resp.Status, resp.Body())
		add("short=%v", sdk.Sleep(10*time.Millisecond))
		add("long=%v", sdk.Sleep(time.Hour))
		return sdk.Errorf("%s", strings.Join(r, " "))
	})
}

func main() {}
