package endpointslice

import (
	"fmt"
	"net"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/controller/endpoints"
	"github.com/wasmkube/wasmkube/core/controller/podstate"
)

// Label values of discoveryv1.LabelManagedBy, as upstream's two controllers write them.
const (
	ManagedBy          = "endpointslice-controller.k8s.io"
	MirrorManagedBy    = "endpointslicemirroring-controller.k8s.io"
	DefaultMaxPerSlice = 100 // upstream's --max-endpoints-per-slice default
	// mirrorMaxPerSlice is the mirroring controller's limit (upstream's
	// --mirroring-max-endpoints-per-subset default).
	mirrorMaxPerSlice = 1000
)

// Group is a set of endpoints that share one list of ports: one or more slices hold it.
type Group struct {
	Ports     []discoveryv1.EndpointPort
	Endpoints []discoveryv1.Endpoint // sorted by address
}

// Changes is what Reconcile decided: slices to create (by generateName), to update (the
// full new object, resourceVersion kept) and to delete.
type Changes struct {
	Create, Update, Delete []*discoveryv1.EndpointSlice
}

// Empty reports whether nothing needs to change.
func (c Changes) Empty() bool { return len(c.Create)+len(c.Update)+len(c.Delete) == 0 }

// PodGroups is what a Service's pods become: one endpoint per pod that has an IPv4 address
// and has not finished, grouped by the ports the Service's ports resolve to in the pod
// (named target ports can differ between pods), as upstream's EndpointSlice controller:
// a terminating pod stays with ready=false and terminating=true, serving while it is ready;
// a pod lacking a named port is left out. zones maps node names to their
// topology.kubernetes.io/zone label.
func PodGroups(svc *corev1.Service, pods []*corev1.Pod, zones map[string]string) []Group {
	groups := map[string]*Group{}
	for _, p := range pods {
		if p.Status.PodIP == "" || net.ParseIP(p.Status.PodIP).To4() == nil ||
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		eps, ok := endpoints.PodPorts(svc, p)
		if !ok {
			continue
		}
		ports := slicePorts(eps)
		key := portsKey(ports)
		g, ok := groups[key]
		if !ok {
			g = &Group{Ports: ports}
			groups[key] = g
		}
		terminating := p.DeletionTimestamp != nil
		podReady := podstate.IsReady(p)
		ready := svc.Spec.PublishNotReadyAddresses || (podReady && !terminating)
		serving := svc.Spec.PublishNotReadyAddresses || podReady
		ep := discoveryv1.Endpoint{
			Addresses:  []string{p.Status.PodIP},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		}
		if p.Spec.NodeName != "" {
			n := p.Spec.NodeName
			ep.NodeName = &n
			if z, ok := zones[n]; ok && z != "" {
				ep.Zone = &z
			}
		}
		// As the Endpoints controller: a pod whose subdomain names this Service is
		// published under its hostname (the DNS name <hostname>.<svc>.<ns>.svc).
		if p.Spec.Hostname != "" && p.Spec.Subdomain == svc.Name && p.Namespace == svc.Namespace {
			h := p.Spec.Hostname
			ep.Hostname = &h
		}
		g.Endpoints = append(g.Endpoints, ep)
	}
	return sortedGroups(groups)
}

// EndpointsGroups is what a selector-less Service's Endpoints become (upstream's
// EndpointSlice mirroring): one group per subset, ready addresses ready and serving,
// not-ready ones neither.
func EndpointsGroups(ep *corev1.Endpoints) []Group {
	groups := map[string]*Group{}
	for _, ss := range ep.Subsets {
		ports := slicePorts(ss.Ports)
		key := portsKey(ports)
		g, ok := groups[key]
		if !ok {
			g = &Group{Ports: ports}
			groups[key] = g
		}
		add := func(a corev1.EndpointAddress, ready bool) {
			if net.ParseIP(a.IP).To4() == nil {
				return
			}
			r, s := ready, ready
			e := discoveryv1.Endpoint{Addresses: []string{a.IP}, Conditions: discoveryv1.EndpointConditions{Ready: &r, Serving: &s}}
			if a.Hostname != "" {
				h := a.Hostname
				e.Hostname = &h
			}
			if a.NodeName != nil {
				n := *a.NodeName
				e.NodeName = &n
			}
			if a.TargetRef != nil {
				e.TargetRef = a.TargetRef.DeepCopy()
			}
			g.Endpoints = append(g.Endpoints, e)
		}
		for _, a := range ss.Addresses {
			add(a, true)
		}
		for _, a := range ss.NotReadyAddresses {
			add(a, false)
		}
	}
	return sortedGroups(groups)
}

func sortedGroups(groups map[string]*Group) []Group {
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Group, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		sort.SliceStable(g.Endpoints, func(i, j int) bool { return g.Endpoints[i].Addresses[0] < g.Endpoints[j].Addresses[0] })
		out = append(out, *g)
	}
	return out
}

func slicePorts(eps []corev1.EndpointPort) []discoveryv1.EndpointPort {
	out := make([]discoveryv1.EndpointPort, 0, len(eps))
	for _, p := range eps {
		name, port, proto := p.Name, p.Port, p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		sp := discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &proto}
		if p.AppProtocol != nil {
			a := *p.AppProtocol
			sp.AppProtocol = &a
		}
		out = append(out, sp)
	}
	return out
}

// portsKey identifies a port list regardless of order.
func portsKey(ports []discoveryv1.EndpointPort) string {
	parts := make([]string, 0, len(ports))
	for _, p := range ports {
		var name, proto, app string
		var num int32
		if p.Name != nil {
			name = *p.Name
		}
		if p.Protocol != nil {
			proto = string(*p.Protocol)
		}
		if p.Port != nil {
			num = *p.Port
		}
		if p.AppProtocol != nil {
			app = *p.AppProtocol
		}
		parts = append(parts, fmt.Sprintf("%s/%d/%s/%s", name, num, proto, app))
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

// Owner names the object the slices belong to and how they are labelled.
type Owner struct {
	Service   *corev1.Service
	ManagedBy string // ManagedBy or MirrorManagedBy
	// MaxPerSlice bounds the endpoints of one slice; 0 is DefaultMaxPerSlice.
	MaxPerSlice int
}

// Reconcile decides how the existing slices of owner (those it manages) become groups, as
// upstream's reconciler: an endpoint already in a slice of its ports stays in that slice
// (updated in place if it changed), so a change to one pod rewrites one slice; new
// endpoints fill the slices of their ports that have room, then new slices; a slice left
// empty is deleted; a slice whose ports no group has is deleted. A Service without any
// endpoint keeps one empty placeholder slice, as upstream's. The result is deterministic.
func Reconcile(o Owner, groups []Group, existing []*discoveryv1.EndpointSlice) Changes {
	max := o.MaxPerSlice
	if max <= 0 {
		max = DefaultMaxPerSlice
	}
	existing = append([]*discoveryv1.EndpointSlice(nil), existing...)
	sort.Slice(existing, func(i, j int) bool { return existing[i].Name < existing[j].Name })

	var ch Changes
	total := 0
	for _, g := range groups {
		total += len(g.Endpoints)
	}
	if total == 0 {
		// The placeholder: one slice without ports or endpoints.
		var keep *discoveryv1.EndpointSlice
		for _, es := range existing {
			if keep == nil && len(es.Endpoints) == 0 && len(es.Ports) == 0 {
				keep = es
				if want := o.withMeta(es.DeepCopy()); !equality.Semantic.DeepEqual(want, es) {
					ch.Update = append(ch.Update, want)
				}
				continue
			}
			ch.Delete = append(ch.Delete, es)
		}
		if keep == nil {
			ch.Create = append(ch.Create, o.newSlice(nil))
		}
		return ch
	}

	byKey := map[string]*Group{}
	want := map[string]map[string]discoveryv1.Endpoint{} // group key -> address -> endpoint not placed yet
	var keys []string
	for i := range groups {
		k := portsKey(groups[i].Ports)
		byKey[k] = &groups[i]
		keys = append(keys, k)
		m := map[string]discoveryv1.Endpoint{}
		for _, e := range groups[i].Endpoints {
			m[e.Addresses[0]] = e
		}
		want[k] = m
	}
	// Pass 1: keep what stays where it is.
	kept := map[string][]*discoveryv1.EndpointSlice{} // group key -> slices still holding endpoints
	for _, es := range existing {
		k := portsKey(es.Ports)
		m, ok := want[k]
		if !ok || len(es.Endpoints) == 0 {
			ch.Delete = append(ch.Delete, es)
			continue
		}
		next := es.DeepCopy()
		next.Endpoints = next.Endpoints[:0]
		for _, e := range es.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			if w, ok := m[e.Addresses[0]]; ok && len(next.Endpoints) < max {
				next.Endpoints = append(next.Endpoints, w)
				delete(m, e.Addresses[0])
			}
		}
		if len(next.Endpoints) == 0 {
			ch.Delete = append(ch.Delete, es)
			continue
		}
		kept[k] = append(kept[k], next)
	}
	// Pass 2: place the rest, first into kept slices with room, then into new ones.
	for _, k := range keys {
		rest := make([]discoveryv1.Endpoint, 0, len(want[k]))
		for _, e := range byKey[k].Endpoints {
			if _, ok := want[k][e.Addresses[0]]; ok {
				rest = append(rest, e)
			}
		}
		for _, next := range kept[k] {
			for len(rest) > 0 && len(next.Endpoints) < max {
				next.Endpoints = append(next.Endpoints, rest[0])
				rest = rest[1:]
			}
		}
		for len(rest) > 0 {
			n := min(max, len(rest))
			es := o.newSlice(byKey[k].Ports)
			es.Endpoints = append([]discoveryv1.Endpoint(nil), rest[:n]...)
			rest = rest[n:]
			ch.Create = append(ch.Create, es)
		}
	}
	// Updates: every kept slice that differs from what is stored.
	orig := map[string]*discoveryv1.EndpointSlice{}
	for _, es := range existing {
		orig[es.Name] = es
	}
	for _, k := range keys {
		for _, next := range kept[k] {
			sort.SliceStable(next.Endpoints, func(i, j int) bool { return next.Endpoints[i].Addresses[0] < next.Endpoints[j].Addresses[0] })
			next.Ports = byKey[k].Ports
			next = o.withMeta(next)
			if !equality.Semantic.DeepEqual(next, orig[next.Name]) {
				ch.Update = append(ch.Update, next)
			}
		}
	}
	return ch
}

// newSlice is a slice of the owner to be created, named by the API server.
func (o Owner) newSlice(ports []discoveryv1.EndpointPort) *discoveryv1.EndpointSlice {
	svc := o.Service
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{GenerateName: svc.Name + "-", Namespace: svc.Namespace},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       ports,
	}
	return o.withMeta(es)
}

// withMeta sets the labels (the Service's own, then kubernetes.io/service-name and
// endpointslice.kubernetes.io/managed-by, as upstream) and the controller reference.
func (o Owner) withMeta(es *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	svc := o.Service
	labels := map[string]string{}
	if o.ManagedBy == ManagedBy {
		for k, v := range svc.Labels {
			labels[k] = v
		}
	}
	labels[discoveryv1.LabelServiceName] = svc.Name
	labels[discoveryv1.LabelManagedBy] = o.ManagedBy
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		labels[corev1.IsHeadlessService] = ""
	} else {
		delete(labels, corev1.IsHeadlessService)
	}
	es.Labels = labels
	yes := true
	es.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
		Controller: &yes, BlockOwnerDeletion: &yes}}
	if es.AddressType == "" {
		es.AddressType = discoveryv1.AddressTypeIPv4
	}
	return es
}
