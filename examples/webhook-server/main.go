// Command webhook-server is a small validating admission webhook, installed the way a
// chart installs one (docs/admission.md, "Installing a webhook server"): a Deployment, a
// Service in front of it, and a ValidatingWebhookConfiguration whose caBundle signs the
// server's certificate. It refuses pods that lack a label (team by default) with a
// message naming the pod and the label, and admits everything else.
//
//	webhook-server --cert /tls/tls.crt --key /tls/tls.key --listen :8443 --require-label team
//
// `make images` builds it into the image wasmkube.local/webhook-server:latest.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func main() {
	cert := flag.String("cert", "/tls/tls.crt", "the serving certificate (PEM)")
	key := flag.String("key", "/tls/tls.key", "its private key (PEM)")
	listen := flag.String("listen", ":8443", "address to serve HTTPS on")
	label := flag.String("require-label", "team", "pods without this label are refused")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", func(w http.ResponseWriter, r *http.Request) { serve(w, r, *label) })
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	log.Printf("webhook-server: serving HTTPS on %s, refusing pods without label %q", *listen, *label)
	log.Fatal(http.ListenAndServeTLS(*listen, *cert, *key, mux))
}

// serve answers one AdmissionReview (admission.k8s.io/v1).
func serve(w http.ResponseWriter, r *http.Request, label string) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("want an AdmissionReview with a request: %v", err), http.StatusBadRequest)
		return
	}
	review.Response = decide(review.Request, label)
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

// decide is the policy: a pod without the label is refused, anything else admitted.
func decide(req *admissionv1.AdmissionRequest, label string) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if req.Kind.Kind != "Pod" || len(req.Object.Raw) == 0 {
		return resp
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		resp.Allowed = false
		resp.Result = &metav1.Status{Code: http.StatusBadRequest, Message: "webhook-server: the object is not a pod: " + err.Error()}
		return resp
	}
	if _, ok := pod.Labels[label]; !ok {
		name := pod.Name
		if name == "" {
			name = pod.GenerateName + "*"
		}
		resp.Allowed = false
		resp.Result = &metav1.Status{Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
			Message: fmt.Sprintf("webhook-server: pod %q must carry the label %q", name, label)}
	}
	log.Printf("webhook-server: %s %s/%s: allowed=%v", req.Operation, req.Namespace, req.Name, resp.Allowed)
	return resp
}
