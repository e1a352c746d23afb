package apiserver_test

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// TestQueryParametersValidated: a malformed query parameter is a 400 naming it (or, for
// the combinations upstream forbids, upstream's 422 on ListOptions), whichever verb the
// request is; well-formed ones are served.
func TestQueryParametersValidated(t *testing.T) {
	srv := apiservertest.Start(t)
	hc, err := rest.HTTPClientFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	cms := "/api/v1/namespaces/default/configmaps"
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"q"}}`
	created := "" // the config map's resourceVersion once the POST below made it
	for _, c := range []struct {
		method, path, body string
		code               int
		mention            string // in the Status message
	}{
		{"GET", cms + "?watch=true&allowWatchBookmarks=x", "", 400, "allowWatchBookmarks"},
		{"GET", cms + "?allowWatchBookmarks=x", "", 400, "allowWatchBookmarks"},
		{"GET", cms + "?watch=yes", "", 400, "watch"},
		{"GET", cms + "?timeoutSeconds=abc", "", 400, "timeoutSeconds"},
		{"GET", cms + "?watch=true&timeoutSeconds=-1", "", 400, "timeoutSeconds"},
		{"GET", cms + "?limit=-1", "", 400, "limit"},
		{"GET", cms + "?limit=ten", "", 400, "limit"},
		{"GET", cms + "?resourceVersion=1&resourceVersionMatch=Newest", "", 400, "resourceVersionMatch"},
		{"GET", cms + "?resourceVersionMatch=NotOlderThan", "", 422, "resourceVersionMatch is forbidden unless resourceVersion is provided"},
		{"GET", cms + "?resourceVersion=0&resourceVersionMatch=Exact", "", 422, "resourceVersionMatch"},
		{"GET", cms + "?pretty=maybe", "", 400, "pretty"},
		{"GET", cms + "?labelSelector=a%3D(", "", 400, "labelSelector"},
		{"GET", cms + "?fieldSelector=a%3D%3D%3Db", "", 400, "fieldSelector"},
		{"GET", cms + "/q?resourceVersion=abc", "", 400, "resourceVersion"},
		{"GET", cms + "?timeout=soon", "", 400, "timeout"},
		{"POST", cms + "?dryRun=Some", body, 400, "dryRun"},
		{"POST", cms + "?fieldManager=" + strings.Repeat("m", 200), body, 400, "fieldManager"},
		{"POST", cms + "?fieldValidation=Loud", body, 400, "fieldValidation"},
		{"DELETE", cms + "/q?propagationPolicy=Sideways", "", 400, "propagationPolicy"},
		{"DELETE", cms + "/q?gracePeriodSeconds=soon", "", 400, "gracePeriodSeconds"},
		{"DELETE", cms + "/q?orphanDependents=perhaps", "", 400, "orphanDependents"},
		{"GET", "/api/v1/namespaces/default/pods/p/log?tailLines=-3", "", 400, "tailLines"},
		{"GET", "/api/v1/namespaces/default/pods/p/log?sinceSeconds=0", "", 400, "sinceSeconds"},
		{"GET", "/api/v1/namespaces/default/pods/p/log?sinceTime=yesterday", "", 400, "sinceTime"},
		{"GET", "/api/v1/namespaces/default/pods/p/log?follow=on", "", 400, "follow"},
		// Well-formed: served.
		{"POST", cms + "?fieldManager=kubectl-create&fieldValidation=Strict", body, 201, ""},
		{"GET", cms + "?limit=1&resourceVersion=0&resourceVersionMatch=NotOlderThan&pretty=true", "", 200, ""},
		{"GET", cms + "?labelSelector=a%3Db&fieldSelector=metadata.name%3Dq", "", 200, ""},
		// resourceVersion=0 may answer from a cache that has not seen the create yet (any
		// version, as upstream); at the create's version it waits for the cache ("not older than").
		{"GET", cms + "/q?resourceVersion={created}", "", 200, ""},
		{"DELETE", cms + "/q?propagationPolicy=Background&gracePeriodSeconds=0", "", 200, ""},
	} {
		c.path = strings.ReplaceAll(c.path, "{created}", created)
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, resp.StatusCode, b, c.code)
			continue
		}
		if c.method == "POST" && resp.StatusCode == 201 {
			var cm metav1.PartialObjectMetadata
			if err := json.Unmarshal(b, &cm); err != nil || cm.ResourceVersion == "" {
				t.Fatalf("created config map: %v: %s", err, b)
			}
			created = cm.ResourceVersion
		}
		if c.mention == "" {
			continue
		}
		var st metav1.Status
		if err := json.Unmarshal(b, &st); err != nil || !strings.Contains(st.Message, c.mention) {
			t.Errorf("%s %s: message %q does not name %q", c.method, c.path, st.Message, c.mention)
		}
	}
}

// TestUnauthenticatedSlowBodyClosed is issue 16's case through the whole server: a
// request without a token whose 100-byte body comes at one byte per 5 s gets its 401 at
// once, and the connection is closed instead of held for the body.
func TestUnauthenticatedSlowBodyClosed(t *testing.T) {
	srv := apiservertest.Start(t)
	u, _ := url.Parse(srv.URL)
	c, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // far past the 10 s target: reaching it is a failure
	if _, err := io.WriteString(c, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for range 99 {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Second):
			}
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("got %d, want 401", resp.StatusCode)
	}
	_, err = io.Copy(io.Discard, br)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Errorf("the server held the connection of an unauthenticated slow body open")
	}
}
