package storage

import (
	"context"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// compactRevKey coordinates compaction between API servers sharing one etcd, with the
// same key and protocol as upstream kube-apiserver: whoever bumps its version compacts.
const compactRevKey = "compact_rev_key"

// runCompactor compacts etcd every interval to the revision seen one interval earlier,
// so clients always have at least one interval of history to resume watches from.
func (b *Backend) runCompactor(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var version, rev int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var err error
		if version, rev, err = b.compact(ctx, version, rev); err != nil && ctx.Err() == nil {
			b.log.Warn("etcd compaction failed", "err", err)
		}
	}
}

// compact is one round of the protocol: if compactRevKey still has the version this
// server saw last round, it records rev there and compacts to it; otherwise another
// server compacted and this one adopts its version. It returns the version and the
// current revision for the next round.
func (b *Backend) compact(ctx context.Context, version, rev int64) (int64, int64, error) {
	resp, err := b.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(compactRevKey), "=", version)).
		Then(clientv3.OpPut(compactRevKey, strconv.FormatInt(rev, 10))).
		Else(clientv3.OpGet(compactRevKey)).
		Commit()
	if err != nil {
		return version, rev, err
	}
	curRev := resp.Header.Revision
	if !resp.Succeeded {
		return resp.Responses[0].GetResponseRange().Kvs[0].Version, curRev, nil
	}
	if rev == 0 {
		return version + 1, curRev, nil
	}
	start := time.Now()
	if _, err := b.client.Compact(ctx, rev); err != nil {
		return version + 1, curRev, etcdErr(err, "compact")
	}
	observe("compact", "", start)
	b.log.Info("compacted etcd history", "revision", rev)
	b.mu.Lock()
	for _, c := range b.cachers {
		c.compacted(rev)
	}
	b.mu.Unlock()
	return version + 1, curRev, nil
}
