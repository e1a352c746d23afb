package controller_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/controller"
)

// Every namespace, old and new, gets the default account and kube-root-ca.crt; a deleted
// account and an edited CA ConfigMap are put back.
func TestServiceAccountsAndRootCA(t *testing.T) {
	e := newEnv(t, envOpts{ctrl: &controller.Options{Workers: 2}})
	if _, err := e.client.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ca := string(e.srv.API.CACertPEM())
	has := func(ns string) func() (bool, error) {
		return func() (bool, error) {
			if _, err := e.client.CoreV1().ServiceAccounts(ns).Get(e.ctx, "default", metav1.GetOptions{}); err != nil {
				return false, err
			}
			cm, err := e.client.CoreV1().ConfigMaps(ns).Get(e.ctx, "kube-root-ca.crt", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return cm.Data["ca.crt"] == ca, nil
		}
	}
	for _, ns := range []string{"default", "kube-system", "team-a"} {
		e.eventually("default account and root CA in "+ns, has(ns))
	}
	if err := e.client.CoreV1().ServiceAccounts("team-a").Delete(e.ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, _ := e.client.CoreV1().ConfigMaps("team-a").Get(e.ctx, "kube-root-ca.crt", metav1.GetOptions{})
	cm.Data["ca.crt"] = "tampered"
	if _, err := e.client.CoreV1().ConfigMaps("team-a").Update(e.ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("default account and root CA restored in team-a", has("team-a"))
}
