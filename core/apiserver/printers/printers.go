// Package printers turns API objects into the metav1.Table that `kubectl get` shows when it
// asks the server for server-side printing (Accept: application/json;as=Table;g=meta.k8s.io;v=v1).
// Columns, cell values and their order follow upstream's printers, so output matches what a
// Kubernetes user expects, including the STATUS that kubectl derives for a pod. Wide columns
// (-o wide) have Priority 1; the server always fills every cell and kubectl hides the rest.
package printers

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

// ErrWrongType is wrapped by Table when an object is not of the kind named by the gvk.
var ErrWrongType = fmt.Errorf("object does not match the table's kind")

// printer knows the columns of one kind and how to print one object of it.
type printer struct {
	columns []metav1.TableColumnDefinition
	row     func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool)
}

var printers = map[schema.GroupVersionKind]printer{}

func register(gvk schema.GroupVersionKind, columns []metav1.TableColumnDefinition, row func(runtime.Object, time.Time) ([]any, []metav1.TableRowCondition, bool)) {
	printers[gvk] = printer{columns: columns, row: row}
}

// Table prints objs (all of kind gvk) as a Table with upstream's columns for that kind. An
// empty objs still yields the column definitions. Kinds without a dedicated printer get NAME
// and AGE. Each row carries its object in Object so the server can embed it as the request's
// includeObject asks.
func Table(gvk schema.GroupVersionKind, objs []runtime.Object) (*metav1.Table, error) {
	return table(gvk, objs, time.Now())
}

func table(gvk schema.GroupVersionKind, objs []runtime.Object, now time.Time) (*metav1.Table, error) {
	p, ok := printers[gvk]
	if !ok {
		p = defaultPrinter
	}
	t := &metav1.Table{
		TypeMeta:          metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
		ColumnDefinitions: append([]metav1.TableColumnDefinition(nil), p.columns...), // callers may edit their table
		Rows:              make([]metav1.TableRow, 0, len(objs)),
	}
	for _, obj := range objs {
		cells, conds, ok := p.row(obj, now)
		if !ok {
			return nil, fmt.Errorf("print %s as %s: %w", typeName(obj), gvk.Kind, ErrWrongType)
		}
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells, Conditions: conds, Object: runtime.RawExtension{Object: obj}})
	}
	return t, nil
}

func typeName(obj runtime.Object) string {
	return fmt.Sprintf("%T", obj)
}

// Column descriptions reuse the API's own field docs, as upstream does.
var (
	objectMetaDoc = metav1.ObjectMeta{}.SwaggerDoc()
	nameColumn    = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: objectMetaDoc["name"]}
	ageColumn     = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: objectMetaDoc["creationTimestamp"]}
)

// age formats the time since t like upstream's translateTimestampSince.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func microAge(t metav1.MicroTime, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

var defaultPrinter = printer{
	columns: []metav1.TableColumnDefinition{nameColumn, ageColumn},
	row: func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
		m, ok := obj.(metav1.Object)
		if !ok {
			return nil, nil, false
		}
		return []any{m.GetName(), age(m.GetCreationTimestamp(), now)}, nil, true
	},
}

func init() {
	core := func(kind string) schema.GroupVersionKind { return corev1.SchemeGroupVersion.WithKind(kind) }
	register(core("Pod"), podColumns, printPod)
	register(core("Node"), nodeColumns, printNode)
	register(core("Namespace"), namespaceColumns, printNamespace)
	register(core("Service"), serviceColumns, printService)
	register(core("Endpoints"), endpointsColumns, printEndpoints)
	register(core("Event"), eventColumns, printEvent)
	register(core("ConfigMap"), configMapColumns, printConfigMap)
	register(coordinationv1.SchemeGroupVersion.WithKind("Lease"), leaseColumns, printLease)
	register(appsv1.SchemeGroupVersion.WithKind("Deployment"), deploymentColumns, printDeployment)
	register(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), replicaSetColumns, printReplicaSet)
}
