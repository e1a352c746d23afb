package registry

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/wasmkube/wasmkube/core/storage"
)

// Node ports are allocated from upstream's default range.
const (
	nodePortMin = 30000
	nodePortMax = 32767
)

// ServiceAllocator hands out cluster IPs and node ports. The set of addresses in use is
// read from the stored services at each allocation, under a lock, so the store itself is
// the allocation table and nothing is leaked when a service is deleted. (With several
// API servers on one etcd, two could pick the same free address at the same moment; see
// docs/apiserver.md.)
type ServiceAllocator struct {
	mu   sync.Mutex
	cidr *net.IPNet
}

func NewServiceAllocator(cidr string) (*ServiceAllocator, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil || n.IP.To4() == nil {
		return nil, fmt.Errorf("service CIDR %q must be an IPv4 CIDR", cidr)
	}
	return &ServiceAllocator{cidr: n}, nil
}

// usedByServices lists cluster IPs and node ports in use.
func usedByServices(ctx context.Context, st *Store) (map[string]bool, map[int32]bool, error) {
	list, err := st.Storage.List(ctx, storage.Prefix("services", ""), storage.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	ips, ports := map[string]bool{}, map[int32]bool{}
	for _, svc := range list.(*corev1.ServiceList).Items {
		for _, ip := range svc.Spec.ClusterIPs {
			ips[ip] = true
		}
		ips[svc.Spec.ClusterIP] = true
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				ports[p.NodePort] = true
			}
		}
	}
	return ips, ports, nil
}

// allocate fills in spec.clusterIP(s) and node ports of a new service, or checks the
// ones the client asked for. It runs the store's create while holding the lock, so two
// creates through this server never get the same address.
func (a *ServiceAllocator) allocate(ctx context.Context, st *Store, svc *corev1.Service, create func() error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	ips, ports, err := usedByServices(ctx, st)
	if err != nil {
		return st.APIError(err, svc.Name)
	}
	specPath := field.NewPath("spec")
	gk := st.Resource.GVK().GroupKind()
	if svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		switch ip := svc.Spec.ClusterIP; {
		case ip == "" && len(svc.Spec.ClusterIPs) > 0:
			ip = svc.Spec.ClusterIPs[0]
			fallthrough
		case ip != "":
			parsed := net.ParseIP(ip)
			if parsed == nil || !a.cidr.Contains(parsed) {
				return apierrors.NewInvalid(gk, svc.Name, field.ErrorList{field.Invalid(specPath.Child("clusterIP"), ip,
					fmt.Sprintf("provided IP is not in the valid range. The range of valid IPs is %s", a.cidr))})
			}
			if ips[ip] {
				return apierrors.NewInvalid(gk, svc.Name, field.ErrorList{field.Invalid(specPath.Child("clusterIP"), ip,
					"provided IP is already allocated")})
			}
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip, []string{ip}
		default:
			ip, err := a.freeIP(ips)
			if err != nil {
				return apierrors.NewInternalError(err)
			}
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip, []string{ip}
		}
	}
	if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort != 0 {
				if p.NodePort < nodePortMin || p.NodePort > nodePortMax || ports[p.NodePort] {
					return apierrors.NewInvalid(gk, svc.Name, field.ErrorList{field.Invalid(specPath.Child("ports").Index(i).Child("nodePort"), p.NodePort,
						fmt.Sprintf("provided port is already allocated or outside %d-%d", nodePortMin, nodePortMax))})
				}
				ports[p.NodePort] = true
				continue
			}
			free := int32(0)
			start := int32(rand.IntN(nodePortMax - nodePortMin + 1))
			for k := int32(0); k <= nodePortMax-nodePortMin; k++ {
				c := nodePortMin + (start+k)%(nodePortMax-nodePortMin+1)
				if !ports[c] {
					free = c
					break
				}
			}
			if free == 0 {
				return apierrors.NewInternalError(fmt.Errorf("no free node port in %d-%d", nodePortMin, nodePortMax))
			}
			ports[free] = true
			p.NodePort = free
		}
	}
	return create()
}

// freeIP picks a random free address of the range, skipping the network address, the
// first host (reserved for the API server's own service) and the broadcast address.
func (a *ServiceAllocator) freeIP(used map[string]bool) (string, error) {
	base := binary.BigEndian.Uint32(a.cidr.IP.To4())
	ones, bits := a.cidr.Mask.Size()
	size := uint32(1) << uint(bits-ones)
	if size < 4 {
		return "", fmt.Errorf("service CIDR %s is too small", a.cidr)
	}
	n := size - 3
	start := rand.Uint32N(n)
	for k := uint32(0); k < n; k++ {
		off := 2 + (start+k)%n
		ip := make(net.IP, 4)
		binary.BigEndian.PutUint32(ip, base+off)
		if !used[ip.String()] {
			return ip.String(), nil
		}
	}
	return "", fmt.Errorf("service CIDR %s is full", a.cidr)
}
