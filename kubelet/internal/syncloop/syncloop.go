// Package syncloop is the loop the node's table writers share (the service proxy and the
// NetworkPolicy enforcer): rewrite on a change, retry a failed rewrite after a second,
// and take the changes that arrive during a rewrite together in the next one.
package syncloop

import (
	"context"
	"time"
)

// Run calls sync once at once, then after each signal on changed, at most once per
// minInterval; a failed sync is passed to failed and retried after a second. It returns
// when ctx is done.
func Run(ctx context.Context, changed <-chan struct{}, minInterval time.Duration, sync func() error, failed func(error)) {
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-retry.C:
		}
		if err := sync(); err != nil {
			failed(err)
			retry.Reset(time.Second)
		}
		// Changes that arrive while this rewrite ran are taken together by the next one.
		select {
		case <-ctx.Done():
			return
		case <-time.After(minInterval):
		}
	}
}
