// Package notify carries change events out of the coordinator's store so
// that nobody who wants them misses one:
//
//   - Publisher publishes every change of the store's change log to NATS,
//     on the core subject subscribers have always read, which the
//     JetStream change stream (broker) also keeps for replay by sequence
//     or time. Its place in the log is kept in the store, so a restart
//     resumes where it stopped; the event id is the Nats-Msg-Id, so a
//     change published twice around a crash is kept once.
//   - Deliverer posts every change to the webhooks that want it (the
//     config's, filtered by host, URL prefix and change magnitude, and a
//     seed's own), signed with HMAC-SHA256, at least once and in order per
//     webhook URL, retrying with exponential backoff and jitter; after the
//     configured attempts a delivery goes to a dead-letter list an operator
//     can retry or drop. It connects only where a fetch may (the fetcher's
//     address rules, after name resolution, unless AllowPrivate) and
//     follows no redirect; a refused connection dead-letters at once.
//
// Both read the change log, the store's durable record, rather than the
// stream: routing a change to its webhooks, queuing the deliveries and
// moving the cursor happen in one bbolt transaction, so no change is
// routed twice or lost, whatever the stream's retention.
package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/store"
)

// Headers of a webhook request.
const (
	// signatureHeader is "sha256=" and the hex HMAC-SHA256 of the request
	// body under the webhook's secret.
	signatureHeader = "Freshcrawl-Signature"
	// eventIDHeader repeats the body's id, to de-duplicate on without
	// parsing.
	eventIDHeader = "Freshcrawl-Event-Id"
)

// event is the change event of a change of the log. Its id is the id of
// the task whose result found the change: the fold is idempotent by task
// id, so a change has exactly one, whoever publishes it and how often.
func event(ch store.Change) proto.ChangeEvent {
	return proto.ChangeEvent{V: proto.Version, ID: ch.TaskID, Seq: ch.Seq, URL: ch.URL, Host: ch.Host, TaskID: ch.TaskID,
		At: ch.At, Hash: ch.Hash, PrevHash: ch.PrevHash, Diff: proto.DiffSummary(ch.Diff)}
}

// encodeEvent is the JSON of a change's event: the NATS payload and the
// webhook body.
func encodeEvent(ch store.Change) ([]byte, proto.ChangeEvent, error) {
	ev := event(ch)
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, ev, fmt.Errorf("encode change %d: %w", ch.Seq, err)
	}
	return b, ev, nil
}

// sign is the signatureHeader value of body under secret.
func sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// verify reports whether header is body's signature under secret, in
// constant time: what a receiver written in Go does with a request.
func verify(secret string, body []byte, header string) bool {
	return hmac.Equal([]byte(sign(secret, body)), []byte(header))
}

// errNoStore is returned by constructors given no store.
var errNoStore = errors.New("notify: no store")
