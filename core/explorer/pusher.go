package explorer

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
)

// PushInterval is how often a Pusher sends what its ring gained.
const PushInterval = 500 * time.Millisecond

// pushBatch bounds one POST, so that a backlog after an outage is sent in pieces.
const pushBatch = 500

// Push sends the records that ring gains to the API server (POST records), every
// PushInterval, until ctx ends. A record the server refused or could not take is not
// sent again: records are a view of recent decisions, and the next ones will come; a
// backlog larger than the ring is lost the same way (the ring overwrote it). It is how
// the scheduler's records reach the API server (docs/explorer.md says why push).
func Push(ctx context.Context, client rest.Interface, ring *Ring, log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	t := time.NewTicker(PushInterval)
	defer t.Stop()
	_, sent, _, _ := ring.Since(^uint64(0)) // start at the newest record: the server had the older ones or lost them
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		recs, last, _, gone := ring.Since(sent)
		if gone {
			recs, last = ring.All()
		}
		for len(recs) > 0 {
			n := min(len(recs), pushBatch)
			err := post(ctx, client, recs[:n])
			if err != nil && ctx.Err() == nil {
				if !failing {
					log.Warn("explorer: push records to the API server", "records", n, "err", err)
				}
				failing = true
			} else {
				if failing {
					log.Info("explorer: pushing records to the API server again")
				}
				failing = false
			}
			recs = recs[n:]
		}
		sent = last
	}
}

func post(ctx context.Context, client rest.Interface, recs []explorerv1.Record) error {
	body, err := json.Marshal(&explorerv1.RecordList{TypeMeta: metav1.TypeMeta{Kind: "RecordList", APIVersion: explorerv1.APIVersion}, Items: recs})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return client.Post().AbsPath(explorerv1.PathPrefix, explorerv1.ResourceRecords).
		SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
}
