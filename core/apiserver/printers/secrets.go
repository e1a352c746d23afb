package printers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Columns of secrets and service accounts as upstream prints them.
var (
	secretColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Type", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["type"]},
		{Name: "Data", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["data"]},
		ageColumn,
	}
	serviceAccountColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Secrets", Type: "string", Description: corev1.ServiceAccount{}.SwaggerDoc()["secrets"]},
		ageColumn,
	}
)

func printSecret(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return nil, nil, false
	}
	return []any{s.Name, string(s.Type), int64(len(s.Data)), age(s.CreationTimestamp, now)}, nil, true
}

func printServiceAccount(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	sa, ok := obj.(*corev1.ServiceAccount)
	if !ok {
		return nil, nil, false
	}
	return []any{sa.Name, int64(len(sa.Secrets)), age(sa.CreationTimestamp, now)}, nil, true
}

func init() {
	register(corev1.SchemeGroupVersion.WithKind("Secret"), secretColumns, printSecret)
	register(corev1.SchemeGroupVersion.WithKind("ServiceAccount"), serviceAccountColumns, printServiceAccount)
}
