package runtime_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadCgroupStats reads both cgroup layouts the kubelet meets: the unified v2 files
// and the v1 cpuacct and memory hierarchies.
func TestReadCgroupStats(t *testing.T) {
	v2 := t.TempDir()
	writeFiles(t, v2, map[string]string{
		"node-a/c1/cpu.stat":       "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n",
		"node-a/c1/memory.current": "10485760\n",
		"node-a/c1/memory.stat":    "anon 4194304\nfile 6291456\ninactive_file 2097152\nactive_file 4194304\n",
	})
	st, err := runtime.ReadCgroupStats(v2, "/node-a/c1", true)
	if err != nil {
		t.Fatal(err)
	}
	if st.CPUUsageNanos != 1_500_000_000 || st.MemoryUsageBytes != 10485760 || st.MemoryWorkingSetBytes != 10485760-2097152 {
		t.Fatalf("v2 stats = %+v", st)
	}

	v1 := t.TempDir()
	writeFiles(t, v1, map[string]string{
		"cpuacct/node-a/c1/cpuacct.usage":        "2500000000\n",
		"memory/node-a/c1/memory.usage_in_bytes": "8388608\n",
		"memory/node-a/c1/memory.stat":           "cache 1048576\ninactive_file 4096\ntotal_inactive_file 1048576\n",
	})
	st, err = runtime.ReadCgroupStats(v1, "/node-a/c1", false)
	if err != nil {
		t.Fatal(err)
	}
	if st.CPUUsageNanos != 2_500_000_000 || st.MemoryUsageBytes != 8388608 || st.MemoryWorkingSetBytes != 8388608-1048576 {
		t.Fatalf("v1 stats = %+v", st)
	}

	// A missing cgroup (the container is gone) and a systemd path are errors naming what failed.
	if _, err := runtime.ReadCgroupStats(v2, "/node-a/gone", true); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("missing cgroup: err = %v", err)
	}
	if _, err := runtime.ReadCgroupStats(v2, "system.slice:cri:abc", true); err == nil || !strings.Contains(err.Error(), "systemd") {
		t.Fatalf("systemd path: err = %v", err)
	}
	// cpu.stat without usage_usec is malformed.
	writeFiles(t, v2, map[string]string{"node-a/c2/cpu.stat": "user_usec 1\n", "node-a/c2/memory.current": "1\n"})
	if _, err := runtime.ReadCgroupStats(v2, "/node-a/c2", true); err == nil || !strings.Contains(err.Error(), "usage_usec") {
		t.Fatalf("no usage_usec: err = %v", err)
	}
}
