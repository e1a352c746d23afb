package webhook

import (
	"context"
	"fmt"
	"sort"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// Source gives the webhook configurations in force. It is asked once per request.
type Source interface {
	Configurations(ctx context.Context) ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error)
}

// Static is a fixed set of configurations (a server's own, or a test's).
type Static struct {
	Mutating   []*admissionregistrationv1.MutatingWebhookConfiguration
	Validating []*admissionregistrationv1.ValidatingWebhookConfiguration
}

// Configurations implements Source.
func (s Static) Configurations(context.Context) ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	return s.Mutating, s.Validating, nil
}

// Served reads the MutatingWebhookConfigurations and ValidatingWebhookConfigurations the
// API server serves, from its watch cache (no etcd read per request).
type Served struct{ Reader admission.ObjectReader }

// Configurations implements Source.
func (s Served) Configurations(ctx context.Context) ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	var mut []*admissionregistrationv1.MutatingWebhookConfiguration
	var val []*admissionregistrationv1.ValidatingWebhookConfiguration
	if _, _, ok := s.Reader.Resource("mutatingwebhookconfigurations"); !ok {
		return nil, nil, nil // a server that does not serve them has none
	}
	objs, err := s.Reader.List(ctx, "mutatingwebhookconfigurations", "")
	if err != nil {
		return nil, nil, fmt.Errorf("list mutating webhook configurations: %w", err)
	}
	for _, o := range objs {
		if c, ok := o.(*admissionregistrationv1.MutatingWebhookConfiguration); ok {
			mut = append(mut, c)
		}
	}
	objs, err = s.Reader.List(ctx, "validatingwebhookconfigurations", "")
	if err != nil {
		return nil, nil, fmt.Errorf("list validating webhook configurations: %w", err)
	}
	for _, o := range objs {
		if c, ok := o.(*admissionregistrationv1.ValidatingWebhookConfiguration); ok {
			val = append(val, c)
		}
	}
	return mut, val, nil
}

// accessors turns configurations into upstream's webhook accessors (which cache each
// webhook's parsed selectors, REST client and compiled matchConditions), keeping the
// accessors of a configuration object seen before: the reader hands out the same
// pointer until the object changes.
type accessors struct {
	mu    sync.Mutex
	cache map[any][]webhook.WebhookAccessor
}

// hooks returns the mutating and validating webhooks in upstream's order: configurations
// sorted by name, webhooks in their configuration's order.
func (c *accessors) hooks(mut []*admissionregistrationv1.MutatingWebhookConfiguration, val []*admissionregistrationv1.ValidatingWebhookConfiguration) (m, v []webhook.WebhookAccessor) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := make(map[any][]webhook.WebhookAccessor, len(mut)+len(val))
	mut = append([]*admissionregistrationv1.MutatingWebhookConfiguration(nil), mut...)
	sort.SliceStable(mut, func(i, j int) bool { return mut[i].Name < mut[j].Name })
	for _, cfg := range mut {
		hs, ok := c.cache[cfg]
		if !ok {
			names := map[string]int{}
			for i := range cfg.Webhooks {
				h := &cfg.Webhooks[i]
				uid := fmt.Sprintf("%s/%s/%d", cfg.Name, h.Name, names[h.Name])
				names[h.Name]++
				hs = append(hs, webhook.NewMutatingWebhookAccessor(uid, cfg.Name, h))
			}
		}
		next[cfg] = hs
		m = append(m, hs...)
	}
	val = append([]*admissionregistrationv1.ValidatingWebhookConfiguration(nil), val...)
	sort.SliceStable(val, func(i, j int) bool { return val[i].Name < val[j].Name })
	for _, cfg := range val {
		hs, ok := c.cache[cfg]
		if !ok {
			names := map[string]int{}
			for i := range cfg.Webhooks {
				h := &cfg.Webhooks[i]
				uid := fmt.Sprintf("%s/%s/%d", cfg.Name, h.Name, names[h.Name])
				names[h.Name]++
				hs = append(hs, webhook.NewValidatingWebhookAccessor(uid, cfg.Name, h))
			}
		}
		next[cfg] = hs
		v = append(v, hs...)
	}
	c.cache = next
	return m, v
}
