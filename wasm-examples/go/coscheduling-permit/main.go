// Command coscheduling-permit is a wasmkube gang (coscheduling) Permit plugin on the Go
// SDK: pods labelled scheduling.wasmkube.io/group=NAME and
// scheduling.wasmkube.io/min-available=N bind all together or not at all. Each member
// waits at Permit until the N-th arrives, which allows every member waiting in its group;
// when the wait's timeout (args {"timeoutSeconds": 60}, the default) passes first, every
// waiting member is rejected, unreserved and requeued. Pods without the group label are
// allowed at once. It registers Node Add and Update and Pod Delete: new room may let a
// group that timed out fit.
package main

import (
	"errors"
	"strconv"
	"time"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/permit"
	"github.com/wasmkube/wasmkube/sdk/go/queueing"
)

const (
	groupLabel = "scheduling.wasmkube.io/group"
	minLabel   = "scheduling.wasmkube.io/min-available"
)

// Args are the plugin's args.
type Args struct {
	TimeoutSeconds int `json:"timeoutSeconds"`
}

var timeout = 60 * time.Second

func init() {
	sdk.OnInit(configure)
	permit.Register(Permit)
	queueing.Register([]queueing.Event{
		{Resource: "Node", Actions: queueing.Add | queueing.Update},
		{Resource: "Pod", Actions: queueing.Delete},
	}, nil)
}

func configure() error {
	var a Args
	if err := sdk.DecodeArgs(&a); err != nil {
		return err
	}
	switch {
	case a.TimeoutSeconds < 0 || a.TimeoutSeconds > 900:
		return errors.New("timeoutSeconds: must be from 1 to 900")
	case a.TimeoutSeconds > 0:
		timeout = time.Duration(a.TimeoutSeconds) * time.Second
	}
	return nil
}

// Permit holds a member until its group is complete.
func Permit(pod sdk.Pod, _ sdk.Node) permit.Result {
	group, ok := pod.LookupLabel(groupLabel)
	if !ok {
		return permit.Allow()
	}
	min, err := strconv.Atoi(pod.Label(minLabel))
	if err != nil || min < 1 {
		return permit.Result{Status: sdk.Status{Code: sdk.CodeUnschedulableAndUnresolvable,
			Reason: "label " + minLabel + " must be a positive number"}}
	}
	waiting := permit.Waiting(group)
	if len(waiting)+1 < min {
		return permit.Wait(timeout, group)
	}
	for _, uid := range waiting {
		permit.AllowWaiting(uid)
	}
	return permit.Allow()
}

func main() {}
