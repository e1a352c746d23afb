package authn

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
)

// FailureLimiter budgets failed authentication attempts per source IP: burst failures at
// once, then one per 1/r seconds (golang.org/x/time/rate's token bucket, the limiter
// client-go and upstream's API priority and fairness use). Sources over their budget get
// 429 with Retry-After. See docs/security.md for what it protects.
type FailureLimiter struct {
	r     rate.Limit
	burst int
	now   func() time.Time

	mu    sync.Mutex
	bySrc map[string]*rate.Limiter
}

// maxTrackedSources bounds the map; past it, sources with a full budget are dropped.
const maxTrackedSources = 4096

func NewFailureLimiter(perSecond float64, burst int) *FailureLimiter {
	return &FailureLimiter{r: rate.Limit(perSecond), burst: burst, now: time.Now, bySrc: map[string]*rate.Limiter{}}
}

// SourceIP is the client address of r (no forwarding headers are trusted: nothing sits in
// front of the API server).
func SourceIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// Blocked reports whether src has no failures left, and how long until it has one.
func (l *FailureLimiter) Blocked(src string) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.bySrc[src]
	if !ok {
		return 0, false
	}
	return l.waitLocked(lim)
}

func (l *FailureLimiter) waitLocked(lim *rate.Limiter) (time.Duration, bool) {
	tokens := lim.TokensAt(l.now())
	if tokens >= 1 {
		return 0, false
	}
	return time.Duration((1 - tokens) / float64(l.r) * float64(time.Second)), true
}

// Fail records a failed attempt by src; it reports whether src was already over its
// budget (the attempt is then to be answered 429) and how long it should wait.
func (l *FailureLimiter) Fail(src string) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.bySrc[src]
	if !ok {
		if len(l.bySrc) >= maxTrackedSources {
			l.sweepLocked()
		}
		lim = rate.NewLimiter(l.r, l.burst)
		l.bySrc[src] = lim
	}
	if lim.AllowN(l.now(), 1) {
		return 0, false
	}
	return l.waitLocked(lim)
}

func (l *FailureLimiter) sweepLocked() {
	now := l.now()
	for src, lim := range l.bySrc {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(l.bySrc, src)
		}
	}
}

// WriteTooManyFailures answers 429 with Retry-After (whole seconds, at least 1).
func WriteTooManyFailures(w http.ResponseWriter, what string, wait time.Duration) {
	secs := int(math.Ceil(wait.Seconds()))
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	handlers.WriteError(w, apierrors.NewTooManyRequests(fmt.Sprintf("too many failed %s attempts from this address: retry after %d s", what, secs), secs))
}
