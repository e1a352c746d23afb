package apiserver_test

import (
	"strings"
	"testing"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// A StatefulSet manifest with its headless Service applies in one go (kubectl validates both
// client-side against our OpenAPI), and every workload kind prints upstream's columns.
const statefulSetManifest = `apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{port: 80, name: web}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: busybox:1
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {disk: ssd}
      containers:
      - name: agent
        image: busybox:1
`

func TestKubectlWorkloadKinds(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)

	out := k.ok("apply", "-f", k.file("web.yaml", statefulSetManifest))
	for _, want := range []string{"service/web created", "statefulset.apps/web created", "daemonset.apps/agent created"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply: want %q in\n%s", want, out)
		}
	}
	if h := header(k.ok("get", "sts")); h != "NAME READY AGE" {
		t.Errorf("statefulset columns: %q", h)
	}
	if h := header(k.ok("get", "ds")); h != "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE" {
		t.Errorf("daemonset columns: %q", h)
	}
	if out := k.ok("get", "ds", "agent", "--no-headers"); !strings.Contains(out, "disk=ssd") {
		t.Errorf("daemonset row: %q", out)
	}
	// Defaults as upstream.
	if out := k.ok("get", "sts", "web", "-o", "jsonpath={.spec.podManagementPolicy} {.spec.updateStrategy.type} {.spec.updateStrategy.rollingUpdate.partition} {.spec.revisionHistoryLimit}"); out != "OrderedReady RollingUpdate 0 10" {
		t.Errorf("statefulset defaults: %q", out)
	}
	if out := k.ok("get", "ds", "agent", "-o", "jsonpath={.spec.updateStrategy.type} {.spec.updateStrategy.rollingUpdate.maxUnavailable} {.spec.updateStrategy.rollingUpdate.maxSurge}"); out != "RollingUpdate 1 0" {
		t.Errorf("daemonset defaults: %q", out)
	}
	// The scale subresource of a StatefulSet.
	k.ok("scale", "sts", "web", "--replicas=5")
	if out := k.ok("get", "sts", "web", "-o", "jsonpath={.spec.replicas}"); out != "5" {
		t.Errorf("scaled statefulset: replicas %q", out)
	}
	// The service name is fixed at creation, as upstream.
	out, err := k.run("patch", "sts", "web", "-p", `{"spec":{"serviceName":"other"}}`)
	if err == nil || !strings.Contains(out, "updates to statefulset spec for fields other than") {
		t.Errorf("changing serviceName: %v\n%s", err, out)
	}

	// Jobs: kubectl create job, the generated selector and labels, the columns.
	k.ok("create", "job", "pi", "--image=busybox", "--", "true")
	if out := k.ok("get", "job", "pi", "-o", "jsonpath={.spec.completions} {.spec.parallelism} {.spec.backoffLimit} {.spec.completionMode} {.spec.template.metadata.labels.batch\\.kubernetes\\.io/job-name}"); out != "1 1 6 NonIndexed pi" {
		t.Errorf("job defaults: %q", out)
	}
	uid := k.ok("get", "job", "pi", "-o", "jsonpath={.metadata.uid}")
	if out := k.ok("get", "job", "pi", "-o", "jsonpath={.spec.selector.matchLabels.batch\\.kubernetes\\.io/controller-uid}"); out != uid || uid == "" {
		t.Errorf("job selector %q, uid %q", out, uid)
	}
	if h := header(k.ok("get", "jobs")); h != "NAME STATUS COMPLETIONS DURATION AGE" {
		t.Errorf("job columns: %q", h)
	}
	if out := k.ok("get", "job", "pi", "--no-headers"); !strings.Contains(out, "Running") || !strings.Contains(out, "0/1") {
		t.Errorf("job row: %q", out)
	}
	out, err = k.run("patch", "job", "pi", "--type=merge", "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"pi","image":"busybox:2"}]}}}}`)
	if err == nil || !strings.Contains(out, "spec.template: Invalid value") || !strings.Contains(out, "field is immutable") {
		t.Errorf("changing a job's template: %v\n%s", err, out)
	}

	// CronJobs: kubectl create cronjob, a bad schedule and time zone named by field, a Job
	// made from a CronJob.
	k.ok("create", "cronjob", "tick", "--image=busybox", "--schedule=*/5 * * * *", "--", "date")
	if h := header(k.ok("get", "cronjobs")); h != "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE" {
		t.Errorf("cronjob columns: %q", h)
	}
	if out := k.ok("get", "cj", "tick", "-o", "jsonpath={.spec.concurrencyPolicy} {.spec.suspend} {.spec.successfulJobsHistoryLimit} {.spec.failedJobsHistoryLimit}"); out != "Allow false 3 1" {
		t.Errorf("cronjob defaults: %q", out)
	}
	out, err = k.run("create", "cronjob", "bad", "--image=busybox", "--schedule=61 * * * *")
	if err == nil || !strings.Contains(out, `CronJob.batch "bad" is invalid`) || !strings.Contains(out, "spec.schedule: Invalid value") {
		t.Errorf("bad schedule: %v\n%s", err, out)
	}
	out, err = k.run("patch", "cj", "tick", "--type=merge", "-p", `{"spec":{"timeZone":"Mars/Olympus"}}`)
	if err == nil || !strings.Contains(out, "spec.timeZone: Invalid value") {
		t.Errorf("bad time zone: %v\n%s", err, out)
	}
	k.ok("patch", "cj", "tick", "--type=merge", "-p", `{"spec":{"timeZone":"Europe/Paris"}}`)
	k.ok("create", "job", "manual", "--from=cronjob/tick")
	if out := k.ok("get", "job", "manual", "-o", "jsonpath={.metadata.annotations.cronjob\\.kubernetes\\.io/instantiate} {.metadata.ownerReferences[0].kind}"); out != "manual CronJob" {
		t.Errorf("job from cronjob: %q", out)
	}
	// A Job that restarts Always is refused, naming the field.
	out, err = k.run("apply", "-f", k.file("badjob.yaml", `apiVersion: batch/v1
kind: Job
metadata: {name: always}
spec:
  template:
    spec:
      restartPolicy: Always
      containers: [{name: a, image: busybox}]
`))
	if err == nil || !strings.Contains(out, "spec.template.spec.restartPolicy: Unsupported value") {
		t.Errorf("job with restartPolicy Always: %v\n%s", err, out)
	}
	// kubectl get all lists the new kinds.
	out = k.ok("get", "all", "-o", "name")
	for _, want := range []string{"statefulset.apps/web", "daemonset.apps/agent", "job.batch/pi", "cronjob.batch/tick"} {
		if !strings.Contains(out, want) {
			t.Errorf("get all: no %s in\n%s", want, out)
		}
	}
}
