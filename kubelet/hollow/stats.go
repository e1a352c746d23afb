package hollow

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Annotations a pod on a hollow node sets to report a usage in /stats/summary (when
// Options.ServeStats is on and Options.Usage is nil): a quantity for the whole pod, split
// evenly among its containers.
const (
	CPUUsageAnnotation    = "hollow.wasmkube.io/cpu-usage"
	MemoryUsageAnnotation = "hollow.wasmkube.io/memory-usage"
)

// StatsWindow is the window hollow nodes report for their (constant) rates.
const StatsWindow = 10 * time.Second

// UsageFunc says what a running pod uses; ok false leaves the pod out of the summary (as
// a kubelet that has not sampled it yet).
type UsageFunc func(p *v1.Pod) (cpu, memory resource.Quantity, ok bool)

// AnnotationUsage is the default UsageFunc: the pod's CPUUsageAnnotation and
// MemoryUsageAnnotation (memory defaults to 0 when only the CPU is set).
func AnnotationUsage(p *v1.Pod) (cpu, memory resource.Quantity, ok bool) {
	c, has := p.Annotations[CPUUsageAnnotation]
	if !has {
		return cpu, memory, false
	}
	cpu, err := resource.ParseQuantity(c)
	if err != nil {
		return cpu, memory, false
	}
	if m, has := p.Annotations[MemoryUsageAnnotation]; has {
		if memory, err = resource.ParseQuantity(m); err != nil {
			return cpu, memory, false
		}
	}
	return cpu, memory, true
}

// statsServers serve a /stats/summary for each hollow node on a loopback port of its own:
// the API server reaches a kubelet at its node's InternalIP and kubelet port, so each
// node needs an address; they are only opened when Options.ServeStats is set.
type statsServers struct {
	usage UsageFunc
	ports []int
	lns   []net.Listener
	start time.Time

	mu   sync.Mutex
	pods cache.Store // the hollow nodes' pod informer store, once it runs
}

func newStatsServers(count int, usage UsageFunc) (*statsServers, error) {
	if usage == nil {
		usage = AnnotationUsage
	}
	cert, err := selfSignedCert()
	if err != nil {
		return nil, fmt.Errorf("hollow nodes: stats certificate: %w", err)
	}
	s := &statsServers{usage: usage, start: time.Now()}
	for i := 0; i < count; i++ {
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
		if err != nil {
			s.close()
			return nil, fmt.Errorf("hollow nodes: stats listener: %w", err)
		}
		s.lns = append(s.lns, ln)
		s.ports = append(s.ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return s, nil
}

func (s *statsServers) close() {
	for _, ln := range s.lns {
		ln.Close()
	}
}

// serve runs node i's server until ctx ends. Hollow nodes do not check who asks: they
// listen on loopback only and hold no data but the usages they were told.
func (s *statsServers) serve(ctx context.Context, prefix string, i int) {
	name := NodeName(prefix, i)
	mux := http.NewServeMux()
	mux.HandleFunc("/stats/summary", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Wasmkube-Stats-Window", StatsWindow.String())
		_ = json.NewEncoder(w).Encode(s.summary(name))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(s.lns[i]); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return
	}
}

func (s *statsServers) setPods(store cache.Store) {
	s.mu.Lock()
	s.pods = store
	s.mu.Unlock()
}

// address points node at its stats server.
func (s *statsServers) address(node *v1.Node, i int) {
	node.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}, {Type: v1.NodeHostName, Address: node.Name}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(s.ports[i])
}

func (s *statsServers) summary(node string) *statsv1alpha1.Summary {
	now := metav1.Now()
	out := &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: node, StartTime: metav1.NewTime(s.start)}}
	s.mu.Lock()
	store := s.pods
	s.mu.Unlock()
	var nodeCPU, nodeMem uint64
	if store != nil {
		for _, o := range store.List() {
			p, ok := o.(*v1.Pod)
			if !ok || p.Spec.NodeName != node || p.Status.Phase != v1.PodRunning || len(p.Spec.Containers) == 0 {
				continue
			}
			cpu, mem, ok := s.usage(p)
			if !ok {
				continue
			}
			n := int64(len(p.Spec.Containers))
			ps := statsv1alpha1.PodStats{PodRef: statsv1alpha1.PodReference{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID)}, StartTime: now}
			for _, c := range p.Spec.Containers {
				ps.Containers = append(ps.Containers, statsv1alpha1.ContainerStats{Name: c.Name, StartTime: now,
					CPU: cpuOf(now, cpu.ScaledValue(resource.Nano)/n), Memory: memOf(now, mem.Value()/n)})
			}
			ps.CPU, ps.Memory = cpuOf(now, cpu.ScaledValue(resource.Nano)), memOf(now, mem.Value())
			nodeCPU += uint64(cpu.ScaledValue(resource.Nano))
			nodeMem += uint64(mem.Value())
			out.Pods = append(out.Pods, ps)
		}
	}
	out.Node.CPU, out.Node.Memory = cpuOf(now, int64(nodeCPU)), memOf(now, int64(nodeMem))
	return out
}

func cpuOf(t metav1.Time, nanoCores int64) *statsv1alpha1.CPUStats {
	r := uint64(max(nanoCores, 0))
	cum := uint64(float64(r) * StatsWindow.Seconds())
	return &statsv1alpha1.CPUStats{Time: t, UsageNanoCores: &r, UsageCoreNanoSeconds: &cum}
}

func memOf(t metav1.Time, bytes int64) *statsv1alpha1.MemoryStats {
	b := uint64(max(bytes, 0))
	return &statsv1alpha1.MemoryStats{Time: t, UsageBytes: &b, WorkingSetBytes: &b}
}

func selfSignedCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hollow-kubelet"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
