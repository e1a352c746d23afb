// Command incluster calls the API from inside a pod as client-go's in-cluster config does:
// https://kubernetes.default.svc with the pod's mounted service account token, verified
// against its mounted ca.crt. It prints the HTTP status and the start of the body. The
// kubelet's e2e tests build it statically and mount it into a busybox pod (busybox's
// wget cannot do TLS with the server's ECDSA key).
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

func main() {
	token, err1 := os.ReadFile(saDir + "/token")
	ca, err2 := os.ReadFile(saDir + "/ca.crt")
	ns, err3 := os.ReadFile(saDir + "/namespace")
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		fmt.Println("error: no certificate in ca.crt")
		os.Exit(2)
	}
	c := &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	url := "https://kubernetes.default.svc/api/v1/namespaces/" + strings.TrimSpace(string(ns)) + "/pods"
	// The node's proxy rules for the Service may land just after the pod starts.
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		resp, err := c.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 400))
			resp.Body.Close()
			fmt.Printf("status=%d\n%s\n", resp.StatusCode, body)
			return
		}
		fmt.Println("error:", err)
		if time.Now().After(deadline) {
			os.Exit(1)
		}
		time.Sleep(time.Second)
	}
}
