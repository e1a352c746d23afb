package admitwasm_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/explorer"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/admitwasm/admitwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// BenchmarkAdmissionRecording is the decision explorer's cost on admission: a pod create
// through three WAT policies (one mutation, two validations) with the chain's records
// off, on (recorded, never read: a record is built only when read) and on-read (every
// record also built and JSON-encoded once, every 1000 requests, as a page following the
// timeline live would read them). cpu-us/op is the whole process's CPU per request.
//
//	go test ./plugins/admitwasm -run '^$' -bench AdmissionRecording -benchtime 20000x -count 5
func BenchmarkAdmissionRecording(b *testing.B) {
	cfg := `
admission:
  policies:
  - name: add-annotation
    path: ` + wasmbuild.WAT(b, "plugins/admitwasm/testdata/add-annotation.wat") + `
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
    pool: 1
  - name: require-team
    path: ` + wasmbuild.WAT(b, "plugins/admitwasm/testdata/require-team.wat") + `
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
    pool: 1
  - name: require-team-2
    path: ` + wasmbuild.WAT(b, "plugins/admitwasm/testdata/require-team.wat") + `
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
    pool: 1
`
	for _, name := range []string{"off", "on", "on-read"} {
		recording, reading := name != "off", name == "on-read"
		b.Run(name, func(b *testing.B) {
			quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
			h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}, CacheDir: filepath.Join(os.TempDir(), "wasmkube-bench-cache"), Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			pol, err := admitwasm.New(context.Background(), admitwasm.Options{Host: h, Config: []byte(cfg), Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			defer pol.Close(context.Background())
			chain, err := admission.NewChain(pol)
			if err != nil {
				b.Fatal(err)
			}
			var rec *explorer.Recorder
			if recording {
				rec = explorer.NewRecorder(explorer.NewRing(explorer.DefaultSize), explorerv1.ComponentAPIServer, "bench")
				chain.SetRecorder(admission.NewRecorder(rec))
			}
			proto := admittedPod(b)
			proto.UID = "u"
			ctx := context.Background()
			var read uint64
			readAll := func() {
				recs, last, _, _ := rec.Ring().Since(read)
				if _, err := json.Marshal(recs); err != nil {
					b.Fatal(err)
				}
				read = last
			}
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := range b.N {
				a := admitwasmtest.CreatePod(proto.DeepCopy())
				if err := chain.Admit(ctx, a); err != nil {
					b.Fatal(err)
				}
				if reading && i%1000 == 999 {
					readAll()
				}
			}
			if reading {
				readAll()
			}
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}
