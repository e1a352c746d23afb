package runtime

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ContainerStats are a container's cumulative CPU time and current memory, read from its
// cgroup at Time.
type ContainerStats struct {
	Time time.Time
	// CPUUsageNanos is the CPU time the container's processes used since it started
	// (cgroup v2 cpu.stat usage_usec, v1 cpuacct.usage).
	CPUUsageNanos uint64
	// MemoryUsageBytes is memory.current (v2) or memory.usage_in_bytes (v1).
	MemoryUsageBytes uint64
	// MemoryWorkingSetBytes is the usage less inactive file pages, what the kubelet and
	// metrics-server report (and what the OOM killer looks at).
	MemoryWorkingSetBytes uint64
}

// StatsProvider is implemented by runtimes that can read their containers' cgroups. It is
// not part of Runtime so that runtimes without cgroups (Fake, wrappers in tests) need not
// pretend.
type StatsProvider interface {
	// ContainerStats reads the cgroup of the running container id.
	ContainerStats(ctx context.Context, id string) (*ContainerStats, error)
}

// cgroupPaths caches container id -> cgroup path (the OCI spec's linux.cgroupsPath): the
// spec does not change while the container exists, and loading it is a containerd call.
type cgroupPaths struct {
	mu sync.Mutex
	m  map[string]string
}

func (c *cgroupPaths) get(id string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[id]
	return p, ok
}

func (c *cgroupPaths) put(id, p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]string{}
	}
	if len(c.m) > 4096 { // containers come and go: forget all rather than track removals
		c.m = map[string]string{}
	}
	c.m[id] = p
}

// ContainerStats implements StatsProvider by reading the container's cgroup files.
func (r *Containerd) ContainerStats(ctx context.Context, id string) (*ContainerStats, error) {
	path, ok := r.cgroups.get(id)
	if !ok {
		c, err := r.c.LoadContainer(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("stats of container %s: %w", id, wrapNotFound(err))
		}
		spec, err := c.Spec(ctx)
		if err != nil {
			return nil, fmt.Errorf("stats of container %s: spec: %w", id, err)
		}
		if spec.Linux == nil || spec.Linux.CgroupsPath == "" {
			return nil, fmt.Errorf("stats of container %s: its spec names no cgroup", id)
		}
		path = spec.Linux.CgroupsPath
		r.cgroups.put(id, path)
	}
	st, err := ReadCgroupStats(CgroupRoot, path, cgroupV2())
	if err != nil {
		return nil, fmt.Errorf("stats of container %s: %w", id, err)
	}
	return st, nil
}

// CgroupRoot is where the cgroup hierarchies are mounted.
const CgroupRoot = "/sys/fs/cgroup"

// ReadCgroupStats reads the CPU and memory of the cgroup at path (as an OCI
// linux.cgroupsPath: relative to each hierarchy's root) under root: on cgroup v2 the
// unified files cpu.stat (usage_usec), memory.current and memory.stat (inactive_file); on
// v1 cpuacct/cpuacct.usage, memory/memory.usage_in_bytes and memory/memory.stat
// (total_inactive_file). A systemd-style path ("slice:prefix:name") is not supported.
func ReadCgroupStats(root, path string, v2 bool) (*ContainerStats, error) {
	if strings.Count(path, ":") == 2 {
		return nil, fmt.Errorf("cgroup path %q: systemd cgroup paths are not supported", path)
	}
	st := &ContainerStats{Time: time.Now()}
	var cpuFile, memFile, statFile, inactiveKey string
	if v2 {
		dir := filepath.Join(root, path)
		cpuFile, memFile, statFile, inactiveKey = filepath.Join(dir, "cpu.stat"), filepath.Join(dir, "memory.current"), filepath.Join(dir, "memory.stat"), "inactive_file"
	} else {
		cpuFile = filepath.Join(root, "cpuacct", path, "cpuacct.usage")
		memFile = filepath.Join(root, "memory", path, "memory.usage_in_bytes")
		statFile, inactiveKey = filepath.Join(root, "memory", path, "memory.stat"), "total_inactive_file"
	}
	if v2 {
		usec, err := statKey(cpuFile, "usage_usec")
		if err != nil {
			return nil, err
		}
		st.CPUUsageNanos = usec * 1000
	} else {
		ns, err := readUint(cpuFile)
		if err != nil {
			return nil, err
		}
		st.CPUUsageNanos = ns
	}
	mem, err := readUint(memFile)
	if err != nil {
		return nil, err
	}
	st.MemoryUsageBytes = mem
	st.MemoryWorkingSetBytes = mem
	if inactive, err := statKey(statFile, inactiveKey); err == nil {
		if inactive < mem {
			st.MemoryWorkingSetBytes = mem - inactive
		} else {
			st.MemoryWorkingSetBytes = 0
		}
	}
	return st, nil
}

func readUint(file string) (uint64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	return v, nil
}

// statKey reads the value of key from a flat-keyed cgroup file ("key value" lines).
func statKey(file, key string) (uint64, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %s: %w", file, key, err)
			}
			return n, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s: no %s", file, key)
}
