package kubelet

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// tokenSource gives pods' projected serviceAccountToken files their tokens. apiObjects
// implements it with a tokenManager; an Objects without it leaves the source unfilled.
type tokenSource interface {
	PodToken(ctx context.Context, pod *v1.Pod, volume string, proj *v1.ServiceAccountTokenProjection, mode os.FileMode) ([]byte, error)
}

// tokenRefreshCheck is how often the manager looks for tokens due for renewal; renewal
// itself happens at 80% of a token's life (or after 24 hours), as upstream's kubelet.
const tokenRefreshCheck = 10 * time.Second

// tokenManager requests service account tokens bound to pods (TokenRequest with the
// pod as bound object) and rewrites each token file before it expires, while the pod's
// volume directory exists.
type tokenManager struct {
	c       kubernetes.Interface
	rootDir string
	log     *slog.Logger
	now     func() time.Time

	mu      sync.Mutex
	entries map[string]*tokenEntry // podUID/volume/path
	started bool
	stop    chan struct{}
	done    chan struct{}
}

type tokenEntry struct {
	ns, pod, account string
	uid              types.UID
	volume, path     string
	proj             v1.ServiceAccountTokenProjection
	mode             os.FileMode
	issued, expiry   time.Time
}

func newTokenManager(c kubernetes.Interface, rootDir string, log *slog.Logger) *tokenManager {
	return &tokenManager{c: c, rootDir: rootDir, log: log, now: time.Now, entries: map[string]*tokenEntry{},
		stop: make(chan struct{}), done: make(chan struct{})}
}

func (e *tokenEntry) key() string { return string(e.uid) + "/" + e.volume + "/" + e.path }

// due reports whether the token should be renewed at now.
func (e *tokenEntry) due(now time.Time) bool {
	life := e.expiry.Sub(e.issued)
	return now.After(e.issued.Add(life*8/10)) || now.Sub(e.issued) > 24*time.Hour
}

func (m *tokenManager) request(ctx context.Context, e *tokenEntry) (string, error) {
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: e.proj.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: e.pod, UID: e.uid},
	}}
	if e.proj.Audience != "" {
		tr.Spec.Audiences = []string{e.proj.Audience}
	}
	out, err := m.c.CoreV1().ServiceAccounts(e.ns).CreateToken(ctx, e.account, tr, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request token of service account %s/%s for pod %s: %w", e.ns, e.account, e.pod, err)
	}
	e.issued = m.now()
	e.expiry = out.Status.ExpirationTimestamp.Time
	if !e.expiry.After(e.issued) {
		e.expiry = e.issued.Add(time.Hour)
	}
	return out.Status.Token, nil
}

// PodToken implements tokenSource: a fresh token for the file, renewed from then on.
func (m *tokenManager) PodToken(ctx context.Context, pod *v1.Pod, volume string, proj *v1.ServiceAccountTokenProjection, mode os.FileMode) ([]byte, error) {
	account := pod.Spec.ServiceAccountName
	if account == "" {
		account = "default"
	}
	e := &tokenEntry{ns: pod.Namespace, pod: pod.Name, uid: pod.UID, account: account, volume: volume, path: proj.Path, proj: *proj, mode: mode}
	tok, err := m.request(ctx, e)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.entries[e.key()] = e
	if !m.started {
		m.started = true
		go m.loop()
	}
	m.mu.Unlock()
	return []byte(tok), nil
}

func (m *tokenManager) loop() {
	defer close(m.done)
	t := time.NewTicker(tokenRefreshCheck)
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-m.stop; cancel() }()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.refreshDue(ctx)
		}
	}
}

// refreshDue renews every token due and forgets those whose pod volume is gone.
func (m *tokenManager) refreshDue(ctx context.Context) {
	m.mu.Lock()
	var due []*tokenEntry
	now := m.now()
	for k, e := range m.entries {
		if _, err := os.Stat(m.dir(e)); err != nil {
			delete(m.entries, k)
			continue
		}
		if e.due(now) {
			due = append(due, e)
		}
	}
	m.mu.Unlock()
	for _, e := range due {
		tok, err := m.request(ctx, e)
		if apierrors.IsNotFound(err) {
			// The pod (or its account) is gone: nothing to renew for.
			m.forget(e)
			continue
		}
		if err != nil {
			m.log.Warn("service account token renewal failed; retrying", "pod", e.ns+"/"+e.pod, "err", err)
			continue
		}
		if err := writeFileReplace(filepath.Join(m.dir(e), e.path), []byte(tok), e.mode); err != nil {
			m.log.Warn("write renewed service account token", "pod", e.ns+"/"+e.pod, "err", err)
		}
	}
}

func (m *tokenManager) forget(e *tokenEntry) {
	m.mu.Lock()
	delete(m.entries, e.key())
	m.mu.Unlock()
}

func (m *tokenManager) dir(e *tokenEntry) string {
	return filepath.Join(PodDir(m.rootDir, string(e.uid)), "volumes", e.volume)
}

// Close stops renewals.
func (m *tokenManager) Close() {
	m.mu.Lock()
	started := m.started
	m.started = true // no loop starts after Close
	m.mu.Unlock()
	select {
	case <-m.stop:
		return
	default:
		close(m.stop)
	}
	if started {
		<-m.done
	}
}

// writeFileReplace replaces path by rename, so a reader sees the old or the new token,
// never half of one (the volume directory is bind-mounted, so the rename shows).
func writeFileReplace(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode.Perm()); err != nil {
		return err
	}
	_ = os.Chmod(tmp, mode.Perm())
	return os.Rename(tmp, path)
}
