package storage

import (
	"errors"
	"testing"
)

// Where reads are served from, as upstream's cacher decides (shouldDelegateList).
func TestPlanReads(t *testing.T) {
	lists := []struct {
		name   string
		opts   ListOptions
		plan   readPlan
		minRev int64
	}{
		{"no resourceVersion: quorum", ListOptions{}, readQuorum, 0},
		{"rv=0: cache", ListOptions{ResourceVersion: "0"}, readCache, 0},
		{"rv=0 with a limit: cache, limit ignored", ListOptions{ResourceVersion: "0", Limit: 10}, readCache, 0},
		{"rv=N not older than: cache", ListOptions{ResourceVersion: "7", ResourceVersionMatch: MatchNotOlderThan}, readCache, 7},
		{"rv=N not older than with a limit: etcd", ListOptions{ResourceVersion: "7", ResourceVersionMatch: MatchNotOlderThan, Limit: 10}, readAtRev, 7},
		{"rv=N exact: etcd", ListOptions{ResourceVersion: "7", ResourceVersionMatch: MatchExact}, readAtRev, 7},
		{"rv=N without a match: etcd at N here", ListOptions{ResourceVersion: "7"}, readAtRev, 7},
		{"continue: etcd", ListOptions{Continue: "x", Limit: 1}, readAtRev, 0},
	}
	for _, c := range lists {
		plan, minRev, err := planList(c.opts)
		if err != nil || plan != c.plan || minRev != c.minRev {
			t.Errorf("%s: %v %d %v, want %v %d", c.name, plan, minRev, err, c.plan, c.minRev)
		}
	}
	if _, _, err := planList(ListOptions{ResourceVersion: "x"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("list rv=x: %v, want ErrInvalid", err)
	}
	gets := []struct {
		rv     string
		plan   readPlan
		minRev int64
	}{{"", readQuorum, 0}, {"0", readCache, 0}, {"12", readCache, 12}}
	for _, c := range gets {
		plan, minRev, err := planGet(c.rv)
		if err != nil || plan != c.plan || minRev != c.minRev {
			t.Errorf("get rv=%q: %v %d %v, want %v %d", c.rv, plan, minRev, err, c.plan, c.minRev)
		}
	}
}
