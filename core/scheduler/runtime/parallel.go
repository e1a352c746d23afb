package runtime

import (
	"context"
	"sync"
	"sync/atomic"
)

// parallelize runs work over [0,n) in chunks of chunk indices, with up to workers
// goroutines. It stops handing out chunks once ctx is cancelled.
func parallelize(ctx context.Context, workers, n, chunk int, work func(start, end int)) {
	if n <= 0 {
		return
	}
	if chunk < 1 {
		chunk = 1
	}
	chunks := (n + chunk - 1) / chunk
	if workers > chunks {
		workers = chunks
	}
	if workers <= 1 {
		for s := 0; s < n; s += chunk {
			if ctx.Err() != nil {
				return
			}
			work(s, min(s+chunk, n))
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(workers)
	for w := 0; w < workers; w++ {
		go func() {
			defer wg.Done()
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks || ctx.Err() != nil {
					return
				}
				s := c * chunk
				work(s, min(s+chunk, n))
			}
		}()
	}
	wg.Wait()
}

// chunkSize picks how many nodes one worker takes at a time: big enough that a batch
// plugin (wasm) gets many nodes per boundary crossing, small enough that every worker
// gets work and an early stop wastes little.
func chunkSize(n, workers int) int {
	c := n / (workers * 4)
	if c < 8 {
		c = 8
	}
	if c > 128 {
		c = 128
	}
	return c
}
