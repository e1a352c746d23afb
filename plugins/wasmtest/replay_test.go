package wasmtest_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/core/scheduler/cache"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmtest"
)

// profileConfig is a config whose default profile scores with one wasm plugin.
func profileConfig(plugin, path string) []byte {
	return []byte(fmt.Sprintf(`scheduler:
  wasmPlugins:
  - {name: %[1]s, path: %[2]s}
  profiles:
  - schedulerName: default-scheduler
    plugins:
      score:
        disabled: [{name: "*"}]
        enabled: [{name: %[1]s, weight: 1}]
`, plugin, path))
}

// A recording of a real cluster scheduling with pack-score, replayed against the same
// config, changes nothing; replayed against spread-score, it reports the pods that would
// land elsewhere.
func TestRecordAndReplay(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pack, spread := wasmbuild.Go(t, "wasm-examples/go/pack-score"), wasmbuild.Go(t, "wasm-examples/go/spread-score")
	srv := apiservertest.Start(t)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	ready := make(chan struct{})
	go func() {
		_ = hollow.Run(ctx, srv.Config, hollow.Options{Count: 4, Prefix: "n", Ready: ready, Logger: log})
	}()
	<-ready
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := scheduler.New(ctx, scheduler.Options{RESTConfig: srv.Config, Config: profileConfig("pack", pack),
		WasmLoader: schedwasm.NewLoader(h).Load, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Run(ctx) }()

	const pods = 12
	var rec bytes.Buffer
	recReady := make(chan struct{})
	recDone := make(chan error, 1)
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer rcancel()
	go func() {
		_, err := wasmtest.RecordCluster(rctx, srv.Client, &rec, wasmtest.RecordOptions{Cycles: pods, Ready: recReady})
		recDone <- err
	}()
	<-recReady
	for i := range pods {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%02d", i), Namespace: "default"},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m"), v1.ResourceMemory: resource.MustParse("256Mi")}}}}}}
		if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-recDone; err != nil {
		t.Fatalf("record: %v", err)
	}
	recs, err := wasmtest.ReadRecording(&rec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	if err := os.WriteFile(path, rec.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	snap := cache.NewSnapshot()
	build := func(cfg []byte) *wasmtest.Scheduler {
		s, err := wasmtest.NewScheduler(ctx, h, cfg, "", "", snap)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	same, err := wasmtest.Replay(ctx, recs, build(profileConfig("pack", pack)), nil, snap)
	if err != nil {
		t.Fatal(err)
	}
	if same.Cycles != pods || same.Same != pods {
		var out bytes.Buffer
		wasmtest.WriteReplay(&out, same)
		t.Fatalf("pack replayed against its own recording: want %d of %d alike\n%s", pods, pods, out.String())
	}
	moved, err := wasmtest.Replay(ctx, recs, build(profileConfig("spread", spread)), build(profileConfig("pack", pack)), snap)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	wasmtest.WriteReplay(&out, moved)
	if moved.Cycles != pods || moved.Moved == 0 || moved.Fidelity == nil || *moved.Fidelity != pods || !strings.Contains(out.String(), " -> ") {
		t.Fatalf("spread against pack: want moved pods and a baseline that reproduces the recording\n%s", out.String())
	}
	t.Logf("\n%s", out.String())
}
