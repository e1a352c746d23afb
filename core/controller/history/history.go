// Package history keeps the ControllerRevisions of StatefulSets and DaemonSets, as
// upstream's controller history: one revision per distinct pod template, whose data is the
// strategic merge patch {"spec":{"template":{...,"$patch":"replace"}}} that `kubectl
// rollout undo` applies to go back to it, named <owner>-<hash>, numbered in order of use.
package history

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"reflect"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
)

// HashLabel is the label a revision carries with its hash (upstream's).
const HashLabel = "controller.kubernetes.io/hash"

// Data is a revision's data for a pod template.
func Data(t *corev1.PodTemplateSpec) ([]byte, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	m["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": m}})
}

// sameData compares revision data as JSON values: the API server may re-encode the bytes.
func sameData(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// Template decodes a revision's pod template.
func Template(cr *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var d struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(cr.Data.Raw, &d); err != nil {
		return nil, fmt.Errorf("controllerrevision %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	return &d.Spec.Template, nil
}

// Hash is upstream's revision hash: FNV-32a of the data and the collision count, safely encoded.
func Hash(data []byte, collisionCount *int32) string {
	h := fnv.New32a()
	h.Write(data)
	if collisionCount != nil {
		h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// History reads and writes one owner's revisions.
type History struct {
	client kubernetes.Interface
	lister appslisters.ControllerRevisionLister
}

// New uses the factory's ControllerRevision informer.
func New(client kubernetes.Interface, f informers.SharedInformerFactory) *History {
	return &History{client: client, lister: f.Apps().V1().ControllerRevisions().Lister()}
}

// Owner is what History needs of a StatefulSet or DaemonSet.
type Owner struct {
	Obj            metav1.Object
	APIVersion     string
	Kind           string
	Selector       labels.Selector
	Template       *corev1.PodTemplateSpec
	CollisionCount *int32
}

// List returns owner's revisions, oldest first.
func (h *History) List(o Owner) ([]*appsv1.ControllerRevision, error) {
	all, err := h.lister.ControllerRevisions(o.Obj.GetNamespace()).List(o.Selector)
	if err != nil {
		return nil, err
	}
	var out []*appsv1.ControllerRevision
	for _, cr := range all {
		if ref := metav1.GetControllerOfNoCopy(cr); ref != nil && ref.UID == o.Obj.GetUID() {
			out = append(out, cr)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Revision != out[j].Revision {
			return out[i].Revision < out[j].Revision
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Update returns the revision of the owner's current template, creating it (numbered after
// the newest) or renumbering an older equal one (as after a rollback), and the collision
// count to store if a different revision already had the name.
func (h *History) Update(ctx context.Context, o Owner, revs []*appsv1.ControllerRevision) (*appsv1.ControllerRevision, *int32, error) {
	data, err := Data(o.Template)
	if err != nil {
		return nil, o.CollisionCount, err
	}
	var next int64 = 1
	if len(revs) > 0 {
		next = revs[len(revs)-1].Revision + 1
	}
	for _, cr := range revs {
		if !sameData(cr.Data.Raw, data) {
			continue
		}
		if cr.Revision == next-1 {
			return cr, o.CollisionCount, nil
		}
		cp := cr.DeepCopy()
		cp.Revision = next
		out, err := h.client.AppsV1().ControllerRevisions(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
		return out, o.CollisionCount, err
	}
	cc := o.CollisionCount
	for attempt := 0; attempt < 5; attempt++ {
		hash := Hash(data, cc)
		lbls := map[string]string{}
		for k, v := range o.Template.Labels {
			lbls[k] = v
		}
		lbls[HashLabel] = hash
		yes := true
		cr := &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{
				Name: o.Obj.GetName() + "-" + hash, Namespace: o.Obj.GetNamespace(), Labels: lbls,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Obj.GetName(),
					UID: o.Obj.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}},
			},
			Data:     runtime.RawExtension{Raw: data},
			Revision: next,
		}
		out, err := h.client.AppsV1().ControllerRevisions(cr.Namespace).Create(ctx, cr, metav1.CreateOptions{})
		if err == nil {
			return out, cc, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, cc, fmt.Errorf("create controllerrevision %s/%s: %w", cr.Namespace, cr.Name, err)
		}
		existing, gerr := h.client.AppsV1().ControllerRevisions(cr.Namespace).Get(ctx, cr.Name, metav1.GetOptions{})
		if gerr != nil {
			return nil, cc, gerr
		}
		if ref := metav1.GetControllerOf(existing); ref != nil && ref.UID == o.Obj.GetUID() && sameData(existing.Data.Raw, data) {
			return existing, cc, nil // our own, not yet in the cache
		}
		n := int32(1)
		if cc != nil {
			n = *cc + 1
		}
		cc = &n
	}
	return nil, cc, fmt.Errorf("controllerrevision for %s %s/%s: hash collisions", o.Kind, o.Obj.GetNamespace(), o.Obj.GetName())
}

// Truncate deletes the oldest revisions beyond limit, except those in keep (the current
// and update revisions and those live pods still run).
func (h *History) Truncate(ctx context.Context, revs []*appsv1.ControllerRevision, keep map[string]bool, limit int32) error {
	var old []*appsv1.ControllerRevision
	for _, cr := range revs {
		if !keep[cr.Name] {
			old = append(old, cr)
		}
	}
	for i := 0; i < len(old)-int(limit); i++ {
		err := h.client.AppsV1().ControllerRevisions(old[i].Namespace).Delete(ctx, old[i].Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete controllerrevision %s/%s: %w", old[i].Namespace, old[i].Name, err)
		}
	}
	return nil
}
