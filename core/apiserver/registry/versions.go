package registry

import (
	"context"
	"errors"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wasmkube/wasmkube/core/apiserver/conversion"
	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
	"github.com/wasmkube/wasmkube/core/storage"
)

// A built-in kind served in more than one version is stored in one of them (its storage
// version) and the others are views of the same objects: a resource whose storedAs names
// the stored resource gets a store whose storage converts every object on its way in
// (toStored) and out (fromStored). The request pipeline (decoding, patches, defaulting,
// admission, validation, Tables) runs in the requested version, as upstream's handlers see
// the version the client sent; etcd, the watch cache and every other version see the
// stored one. Why at the storage edge: it is the one place every object of a request
// passes (get, list, watch, create, update and its retries, delete), so no verb can forget
// to convert.
type versionView struct {
	inner      storage.Interface
	toStored   func(runtime.Object) (runtime.Object, error)
	fromStored func(runtime.Object) (runtime.Object, error)
	newList    func() runtime.Object
}

// ViewOf is the storage of the version view r over inner, the stored version's storage.
func ViewOf(r *Resource, inner storage.Interface) storage.Interface {
	c := viewConversions[r]
	return &versionView{inner: inner, toStored: c.toStored, fromStored: c.fromStored, newList: r.NewList}
}

// viewConversions are the conversions of the version views, by served resource.
var viewConversions = map[*Resource]struct {
	toStored, fromStored func(runtime.Object) (runtime.Object, error)
}{
	HPAV1:    {toStored: hpaToStored, fromStored: hpaFromStored},
	eventsV1: {toStored: eventToStored, fromStored: eventFromStored},
}

// coreEvents is core/v1 Event, the stored version of events; eventsV1 is events.k8s.io/v1
// Event, a view of the same objects (upstream serves both, and its event recorders, such as
// kube-scheduler's, write events.k8s.io/v1).
var coreEvents = &Resource{GVR: corev1.SchemeGroupVersion.WithResource("events"), Kind: "Event", Singular: "event", Namespaced: true,
	ShortNames: []string{"ev"},
	NewFunc:    NewOf[corev1.Event](), NewList: NewOf[corev1.EventList](), Fields: eventFields}

var eventsV1 = &Resource{GVR: eventsv1.SchemeGroupVersion.WithResource("events"), Kind: "Event", Singular: "event", Namespaced: true,
	ShortNames: []string{"ev"}, StoredAs: coreEvents,
	NewFunc: NewOf[eventsv1.Event](), NewList: NewOf[eventsv1.EventList]()}

func eventToStored(obj runtime.Object) (runtime.Object, error) {
	in, ok := obj.(*eventsv1.Event)
	if !ok {
		return nil, fmt.Errorf("events.k8s.io/v1 view: unexpected %T", obj)
	}
	return conversion.EventFromEventsV1(in), nil
}

func eventFromStored(obj runtime.Object) (runtime.Object, error) {
	in, ok := obj.(*corev1.Event)
	if !ok {
		return nil, fmt.Errorf("events.k8s.io/v1 view: unexpected stored %T", obj)
	}
	return conversion.EventToEventsV1(in), nil
}

// HPAV1 is autoscaling/v1 HorizontalPodAutoscaler, a view of the stored autoscaling/v2.
var HPAV1 = &Resource{GVR: autoscalingv1.SchemeGroupVersion.WithResource("horizontalpodautoscalers"), Kind: "HorizontalPodAutoscaler", Singular: "horizontalpodautoscaler", Namespaced: true,
	ShortNames: []string{"hpa"}, Categories: allCategory, Subresources: []string{"status"}, StoredAs: HPAV2,
	NewFunc: NewOf[autoscalingv1.HorizontalPodAutoscaler](), NewList: NewOf[autoscalingv1.HorizontalPodAutoscalerList]()}

var HPAV2 = &Resource{GVR: autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers"), Kind: "HorizontalPodAutoscaler", Singular: "horizontalpodautoscaler", Namespaced: true,
	ShortNames: []string{"hpa"}, Categories: allCategory, Subresources: []string{"status"},
	NewFunc: NewOf[autoscalingv2.HorizontalPodAutoscaler](), NewList: NewOf[autoscalingv2.HorizontalPodAutoscalerList]()}

// hpaToStored converts a v1 HPA to v2 and applies the v2 defaults: what a v1 client
// writes is stored as a v2 client's write of the same object would be.
func hpaToStored(obj runtime.Object) (runtime.Object, error) {
	in, ok := obj.(*autoscalingv1.HorizontalPodAutoscaler)
	if !ok {
		return nil, fmt.Errorf("autoscaling/v1 view: unexpected %T", obj)
	}
	out, err := conversion.HPAFromV1(in)
	if err != nil {
		var ae *conversion.AnnotationError
		if errors.As(err, &ae) {
			return nil, apierrors.NewInvalid(HPAV1.GVK().GroupKind(), in.Name, field.ErrorList{ae.FieldError(in.Annotations)})
		}
		return nil, err
	}
	defaults.Default(out)
	return out, nil
}

func hpaFromStored(obj runtime.Object) (runtime.Object, error) {
	in, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return nil, fmt.Errorf("autoscaling/v1 view: unexpected stored %T", obj)
	}
	return conversion.HPAToV1(in)
}

func (v *versionView) out(obj runtime.Object, err error) (runtime.Object, error) {
	if err != nil || obj == nil {
		return obj, err
	}
	return v.fromStored(obj)
}

func (v *versionView) Create(ctx context.Context, key string, obj runtime.Object) (runtime.Object, error) {
	s, err := v.toStored(obj)
	if err != nil {
		return nil, err
	}
	return v.out(v.inner.Create(ctx, key, s))
}

func (v *versionView) Get(ctx context.Context, key string) (runtime.Object, error) {
	return v.out(v.inner.Get(ctx, key))
}

func (v *versionView) GuaranteedUpdate(ctx context.Context, key string, pre *storage.Preconditions, tryUpdate storage.UpdateFunc) (runtime.Object, error) {
	return v.out(v.inner.GuaranteedUpdate(ctx, key, pre, func(cur runtime.Object) (runtime.Object, error) {
		c, err := v.fromStored(cur)
		if err != nil {
			return nil, err
		}
		next, err := tryUpdate(c)
		if err != nil {
			return nil, err
		}
		return v.toStored(next)
	}))
}

func (v *versionView) Delete(ctx context.Context, key string, pre *storage.Preconditions) (runtime.Object, error) {
	return v.out(v.inner.Delete(ctx, key, pre))
}

func (v *versionView) List(ctx context.Context, prefix string, opts storage.ListOptions) (runtime.Object, error) {
	if p := opts.Predicate; p != nil {
		// Selectors are compiled for the served version; they read metadata and the
		// served version's field labels, so they see the object as served.
		opts.Predicate = func(obj runtime.Object) bool {
			c, err := v.fromStored(obj)
			return err == nil && p(c)
		}
	}
	list, err := v.inner.List(ctx, prefix, opts)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	conv := make([]runtime.Object, len(items))
	for i, it := range items {
		if conv[i], err = v.fromStored(it); err != nil {
			return nil, err
		}
	}
	out := v.newList()
	src, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	dst, err := meta.ListAccessor(out)
	if err != nil {
		return nil, err
	}
	dst.SetResourceVersion(src.GetResourceVersion())
	dst.SetContinue(src.GetContinue())
	dst.SetRemainingItemCount(src.GetRemainingItemCount())
	return out, meta.SetList(out, conv)
}

func (v *versionView) Watch(ctx context.Context, prefix string, opts storage.WatchOptions) (watch.Interface, error) {
	// Shared encodings are of the stored version: each event is converted, then encoded.
	opts.SharedEncodings = false
	if p := opts.Predicate; p != nil {
		opts.Predicate = func(obj runtime.Object) bool {
			c, err := v.fromStored(obj)
			return err == nil && p(c)
		}
	}
	w, err := v.inner.Watch(ctx, prefix, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if ev.Type == watch.Error {
			return ev, true
		}
		c, err := v.fromStored(ev.Object)
		if err != nil {
			return watch.Event{Type: watch.Error, Object: &apierrors.NewInternalError(err).ErrStatus}, true
		}
		ev.Object = c
		return ev, true
	}), nil
}

func (v *versionView) Count(ctx context.Context, prefix string) (int64, error) {
	return v.inner.Count(ctx, prefix)
}
