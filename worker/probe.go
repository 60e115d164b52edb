package worker

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/freshcrawl/freshcrawl/internal/source"
	"github.com/freshcrawl/freshcrawl/proto"
	"github.com/freshcrawl/freshcrawl/worker/fetch"
	"github.com/freshcrawl/freshcrawl/worker/probeparse"
)

// maxSources bounds the compiled source definitions a worker caches.
const maxSources = 64

// parser returns the parser of the source definition a probe task
// carries, compiling each distinct definition once.
func (w *Worker) parser(def json.RawMessage) (*probeparse.Parser, error) {
	key := string(def)
	w.mu.Lock()
	p, ok := w.parsers[key]
	w.mu.Unlock()
	if ok {
		return p, nil
	}
	src, err := source.DecodeJSON(def, probeparse.CheckSelector)
	if err != nil {
		return nil, fmt.Errorf("decode source definition: %w", err)
	}
	if p, err = probeparse.New(&src); err != nil {
		return nil, err
	}
	w.mu.Lock()
	if len(w.parsers) >= maxSources {
		clear(w.parsers)
	}
	w.parsers[key] = p
	w.mu.Unlock()
	return p, nil
}

// probePage fetches a keyword-search result page or an item page and
// parses the items on it.
func (w *Worker) probePage(ctx context.Context, task proto.Task, res *proto.Result) {
	if task.Probe == nil {
		res.ErrKind, res.Err = proto.ErrContent, "probe task without a probe spec"
		return
	}
	parser, err := w.parser(task.Probe.Def)
	if err != nil {
		res.ErrKind, res.Err = proto.ErrContent, fmt.Sprintf("source %s: %v", task.Probe.Source, err)
		return
	}
	resp := w.fetcher.Fetch(ctx, fetch.Request{URL: task.URL})
	w.opts.Metrics.fetched(resp.Elapsed, resp.Bytes)
	res.StartedAt = resp.Started
	res.Status, res.FinalURL, res.Bytes, res.Truncated = resp.Status, resp.FinalURL, resp.Bytes, resp.Truncated
	res.ContentType, res.RetryAfter = resp.ContentType, resp.RetryAfter
	if resp.ErrKind != proto.ErrNone {
		res.ErrKind = resp.ErrKind
		if resp.Err != nil {
			res.Err = resp.Err.Error()
		}
		return
	}
	res.Total = -1
	if task.Probe.Item != "" {
		it, err := parser.Item(task.Probe.Item, resp.Body)
		if err != nil {
			res.ErrKind, res.Err = proto.ErrContent, err.Error()
			return
		}
		res.Items = []proto.ProbeItem{it}
		return
	}
	items, total, err := parser.Results(resp.Body)
	if err != nil {
		res.ErrKind, res.Err = proto.ErrContent, err.Error()
		return
	}
	res.Items, res.Total = items, total
}
