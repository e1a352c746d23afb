// Package validation checks API objects the way the Kubernetes API server does: the same
// rules, the same messages and the same field paths (metadata.name, spec.containers[0].image,
// ...), so that clients see the errors they already know. Every error is reported, not just
// the first. The functions are pure: they read the object and return a field.ErrorList.
package validation

import (
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var metaPath = field.NewPath("metadata")

// Validate checks an object about to be created. It dispatches on the Go type; for a type it
// does not know it checks only the ObjectMeta (name, generateName, labels, annotations,
// finalizers, owner references) and leaves the namespace presence to the caller.
func Validate(obj runtime.Object) field.ErrorList {
	if errs, ok := validateRBAC(obj); ok { // rbac.go
		return errs
	}
	if errs, ok := validateStorage(obj); ok { // volumes.go
		return errs
	}
	if errs, ok := validateCSI(obj); ok { // csi.go
		return errs
	}
	if errs, ok := validateDRA(obj); ok { // dra.go
		return errs
	}
	if errs, ok := validatePolicy(obj); ok { // policy.go
		return errs
	}
	if errs, ok := validateScheduling(obj); ok { // scheduling.go
		return errs
	}
	if errs, ok := validateAutoscaling(obj); ok { // autoscaling.go
		return errs
	}
	if errs, ok := validateDiscovery(obj); ok { // discovery.go
		return errs
	}
	if errs, ok := validateAdmissionRegistration(obj); ok { // admissionregistration.go
		return errs
	}
	if errs, ok := validateWasmPolicy(obj); ok { // wasmpolicy.go
		return errs
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		return validatePod(o)
	case *corev1.Node:
		return validateNode(o)
	case *corev1.Namespace:
		return validateNamespace(o)
	case *corev1.Service:
		return validateService(o)
	case *corev1.Endpoints:
		return validateEndpoints(o)
	case *corev1.ConfigMap:
		return validateConfigMap(o)
	case *corev1.Secret:
		return validateSecret(o)
	case *corev1.ServiceAccount:
		return validateServiceAccount(o)
	case *corev1.Event:
		return validateEvent(o)
	case *eventsv1.Event:
		return validateEventsV1(o)
	case *coordinationv1.Lease:
		return validateLease(o)
	case *appsv1.Deployment:
		return validateDeployment(o)
	case *appsv1.ReplicaSet:
		return validateReplicaSet(o)
	case *appsv1.StatefulSet:
		return validateStatefulSet(o)
	case *appsv1.DaemonSet:
		return validateDaemonSet(o)
	case *appsv1.ControllerRevision:
		return validateControllerRevision(o)
	case *batchv1.Job:
		return validateJob(o)
	case *batchv1.CronJob:
		return validateCronJob(o)
	case *autoscalingv1.Scale:
		return validateScale(o)
	case *corev1.Binding:
		return validateBinding(o)
	}
	return validateUnknownMeta(obj)
}

// ValidateUpdate checks obj as a replacement for old. It applies the create rules to obj and
// the update rules of the type (immutable fields, allowed pod spec changes, ...). When obj and
// old are not of the same type the result is a single error on the object.
func ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	if reflect.TypeOf(obj) != reflect.TypeOf(old) {
		return field.ErrorList{field.InternalError(nil, errTypeMismatch{obj, old})}
	}
	if errs, ok := validateRBACUpdate(obj, old); ok { // rbac.go
		return errs
	}
	if errs, ok := validateStorageUpdate(obj, old); ok { // volumes.go
		return errs
	}
	if errs, ok := validateCSIUpdate(obj, old); ok { // csi.go
		return errs
	}
	if errs, ok := validateDRAUpdate(obj, old); ok { // dra.go
		return errs
	}
	if errs, ok := validatePolicyUpdate(obj, old); ok { // policy.go
		return errs
	}
	if errs, ok := validateSchedulingUpdate(obj, old); ok { // scheduling.go
		return errs
	}
	if errs, ok := validateAutoscalingUpdate(obj, old); ok { // autoscaling.go
		return errs
	}
	if errs, ok := validateDiscoveryUpdate(obj, old); ok { // discovery.go
		return errs
	}
	if errs, ok := validateWasmPolicyUpdate(obj, old); ok { // wasmpolicy.go
		return errs
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		return validatePodUpdate(o, old.(*corev1.Pod))
	case *corev1.Node:
		return validateNodeUpdate(o, old.(*corev1.Node))
	case *corev1.Namespace:
		return validateNamespaceUpdate(o, old.(*corev1.Namespace))
	case *corev1.Service:
		return validateServiceUpdate(o, old.(*corev1.Service))
	case *corev1.Endpoints:
		return append(metaUpdate(&o.ObjectMeta, &old.(*corev1.Endpoints).ObjectMeta), validateEndpointsSubsets(o)...)
	case *corev1.ConfigMap:
		return validateConfigMapUpdate(o, old.(*corev1.ConfigMap))
	case *corev1.Secret:
		return validateSecretUpdate(o, old.(*corev1.Secret))
	case *corev1.ServiceAccount:
		return append(metaUpdate(&o.ObjectMeta, &old.(*corev1.ServiceAccount).ObjectMeta), validateServiceAccountRefs(o)...)
	case *corev1.Event:
		return validateEventUpdate(o, old.(*corev1.Event))
	case *eventsv1.Event:
		return validateEventsV1Update(o, old.(*eventsv1.Event))
	case *coordinationv1.Lease:
		return append(metaUpdate(&o.ObjectMeta, &old.(*coordinationv1.Lease).ObjectMeta), validateLeaseSpec(&o.Spec, field.NewPath("spec"))...)
	case *appsv1.Deployment:
		return validateDeploymentUpdate(o, old.(*appsv1.Deployment))
	case *appsv1.ReplicaSet:
		return validateReplicaSetUpdate(o, old.(*appsv1.ReplicaSet))
	case *appsv1.StatefulSet:
		return validateStatefulSetUpdate(o, old.(*appsv1.StatefulSet))
	case *appsv1.DaemonSet:
		return validateDaemonSetUpdate(o, old.(*appsv1.DaemonSet))
	case *appsv1.ControllerRevision:
		return validateControllerRevisionUpdate(o, old.(*appsv1.ControllerRevision))
	case *batchv1.Job:
		return validateJobUpdate(o, old.(*batchv1.Job))
	case *batchv1.CronJob:
		return validateCronJobUpdate(o, old.(*batchv1.CronJob))
	case *autoscalingv1.Scale:
		return append(metaUpdate(&o.ObjectMeta, &old.(*autoscalingv1.Scale).ObjectMeta), validateScaleSpec(o)...)
	}
	errs := validateUnknownMeta(obj)
	newMeta, err1 := meta.Accessor(obj)
	oldMeta, err2 := meta.Accessor(old)
	if err1 == nil && err2 == nil {
		errs = append(errs, apimachineryvalidation.ValidateObjectMetaAccessorUpdate(newMeta, oldMeta, metaPath)...)
	}
	return errs
}

type errTypeMismatch struct{ obj, old runtime.Object }

func (e errTypeMismatch) Error() string {
	return "cannot update a " + reflect.TypeOf(e.old).String() + " with a " + reflect.TypeOf(e.obj).String()
}

// objectMeta validates metadata on create. nameFn is the name rule of the type (DNS-1123
// subdomain for most, label for namespaces).
func objectMeta(m *metav1.ObjectMeta, namespaced bool, nameFn apimachineryvalidation.ValidateNameFunc) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMeta(m, namespaced, nameFn, metaPath)
}

// metaUpdate validates metadata changes: name, namespace, uid and creationTimestamp are
// immutable, and the new metadata must itself be valid.
func metaUpdate(newMeta, oldMeta *metav1.ObjectMeta) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMetaUpdate(newMeta, oldMeta, metaPath)
}

func validateUnknownMeta(obj runtime.Object) field.ErrorList {
	acc, err := meta.Accessor(obj)
	if err != nil {
		// Not an object with metadata (a list, a Status, ...): nothing to check.
		return nil
	}
	return apimachineryvalidation.ValidateObjectMetaAccessor(acc, acc.GetNamespace() != "", apimachineryvalidation.NameIsDNSSubdomain, metaPath)
}
