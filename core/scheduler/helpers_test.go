package scheduler_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
)

type respWriter struct {
	b *strings.Builder
	h http.Header
}

func (w *respWriter) Header() http.Header         { return w.h }
func (w *respWriter) Write(p []byte) (int, error) { return w.b.Write(p) }
func (w *respWriter) WriteHeader(int)             {}

func httpRequest() (*http.Request, error) { return httptest.NewRequest("GET", "/metrics", nil), nil }
